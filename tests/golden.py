"""Before/after equality guards: a run's public results with the clock and the run id taken out.

A refactor rebuilt how results are produced and stored (lean records, a lazy `Run.results`,
columnar frames, compact store lines) and promised that nothing a user reads changes. This
module makes that checkable:

- `project(run)` is everything public about a run (every CaseResult field, every frame,
  `stability()`, `summary`, the Run's own fields) as plain JSON data, with only what differs
  from one run to the next normalized: durations and latencies, timestamps, the run id and
  the ids derived from it (an observation's thread_id, turn_id, trace_id). Each of those is
  checked to be present and well-formed before it is replaced by a placeholder; a value
  that is not well-formed is kept as it is, so the comparison shows it.
- `differences(expected, found)` lists where two projections differ, one line per field:
  `results[expense-greeting run=0].turns[0].observation.text: expected 'Hi', found 'Hello'`.
- The golden files under tests/data/golden/ hold the projection of every example suite
  (examples/expected.yaml says which agent and simulator each runs with) as the engine
  produced it before that refactor. tests/test_equivalence_examples.py reruns them and compares.

Regenerate them ONLY when a behaviour change is intended, and say so in the commit:

    python -m tests.golden --update     # rewrite tests/data/golden/*.json
    python -m tests.golden              # compare, print the differences (what the test does)
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import yaml
from pydantic import BaseModel

import convlab as cl
from convlab.agents.protocol import as_agent
from convlab.plan import fingerprint

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())
RUNS = (1, 3)
"""Each example is recorded as tests/test_examples.py runs it (once) and with runs=3, so
`stability()` has repetitions to count; the runs=1 results are the run=0 ones of runs=3."""

FRAMES = ("df", "turns_df", "assertions_df", "checkpoints_df", "tool_calls_df")
TIMING_COLUMNS = {
    "duration_ms",
    "latency_ms",
    "started_at",
    "duration_mean_ms",
    "duration_min_ms",
    "duration_max_ms",
    "duration_std_ms",
}
"""Frame columns whose values are clocks: a number (or a timestamp) is masked, a missing
value stays missing (that a turn has no latency is behaviour)."""

MS = "<ms>"
TIME = "<time>"
RUN_ID = "<run>"
HEX32 = re.compile(r"[0-9a-f]{32}")


# --- normalizing -------------------------------------------------------------------------


def _ms(value: Any) -> Any:
    """A duration: a finite number >= 0 becomes the placeholder; anything else is kept."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return MS if ok and math.isfinite(value) and value >= 0 else value


def _time(value: Any) -> Any:
    """An ISO timestamp becomes the placeholder; anything else (None, garbage) is kept."""
    if not isinstance(value, str):
        return value
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return value
    return TIME


def _assertion(a: dict[str, Any]) -> dict[str, Any]:
    out = dict(a, duration_ms=_ms(a.get("duration_ms")))
    out["children"] = [_assertion(c) for c in a.get("children", [])]
    return out


def _turn_id(thread: str, step_id: str | None, index: int) -> str:
    """intention-kernel's idempotent turn id: `eval.` + sha256 of {stepId, threadId}."""
    payload = {"stepId": step_id or str(index), "threadId": thread}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "eval." + hashlib.sha256(text.encode()).hexdigest()


def case_digest(case_id: str, variant: dict[str, str], repetition: int) -> str:
    """intention-kernel's case id (matrix.ts `expandCases`): sha256 of the JSON of
    {scenarioId, variants, repetition}, keys sorted; a thread id is `<run id>:<this>`."""
    payload = {"scenarioId": case_id, "variants": variant, "repetition": repetition}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _observation(obs: dict[str, Any], turn: dict[str, Any], thread: str | None) -> dict[str, Any]:
    out = dict(obs, latency_ms=_ms(obs.get("latency_ms")))
    if thread is not None and obs.get("thread_id") == thread:
        out["thread_id"] = "<run id>:<case digest>"
        if obs.get("turn_id") == _turn_id(thread, turn.get("step_id"), turn["index"]):
            out["turn_id"] = "eval.<sha256 of stepId, threadId>"
    trace = obs.get("trace_id")
    if isinstance(trace, str) and HEX32.fullmatch(trace):
        out["trace_id"] = "<trace>"
    return out


def _turn(t: dict[str, Any], thread: str | None) -> dict[str, Any]:
    out = dict(t, duration_ms=_ms(t.get("duration_ms")))
    out["assertions"] = [_assertion(a) for a in t.get("assertions", [])]
    if isinstance(t.get("observation"), dict):
        out["observation"] = _observation(t["observation"], t, thread)
    return out


def every_field(value: Any) -> Any:
    """A record as JSON data with every field, defaults included (records encode without
    them), in declaration order; a pydantic model as its own `model_dump(mode="json")`."""
    if isinstance(value, msgspec.Struct):
        return {f.name: every_field(getattr(value, f.name)) for f in msgspec.structs.fields(value)}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [every_field(v) for v in value]
    if isinstance(value, dict):
        return {k: every_field(v) for k, v in value.items()}
    return value


def result_record(
    result: cl.CaseResult, run_id: str, repetitions: dict[str, int] | None = None
) -> dict[str, Any]:
    """One CaseResult, every field (`every_field`), clocks and ids normalized.

    `repetitions` (the suite's per-case repetitions) lets the thread id be checked against
    the kernel's formula, the run index counting as repetitions; without it, or when the id
    does not match, the thread and turn ids are kept as they are (and so differ).
    """
    r = every_field(result)
    r["duration_ms"] = _ms(r["duration_ms"])
    r["started_at"] = _time(r["started_at"])
    thread = None
    if repetitions is not None and run_id and result.case_id in repetitions:
        count = result.run * repetitions[result.case_id] + result.repetition
        thread = f"{run_id}:{case_digest(result.case_id, result.variant, count)}"
    r["turns"] = [_turn(t, thread) for t in r["turns"]]
    r["assertions"] = [_assertion(a) for a in r["assertions"]]
    return r


def suite_repetitions(suite: cl.Suite | None) -> dict[str, int] | None:
    return None if suite is None else {c.id: c.repetitions for c in suite.cases}


def _cell(value: Any) -> Any:
    """A frame cell as plain JSON data (numpy scalars unboxed, NaN/NA spelled out)."""
    if isinstance(value, dict):
        return {str(k): _cell(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cell(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else value
    return f"<{type(value).__name__}>" if str(value) in ("<NA>", "NaT") else repr(value)


def frame_record(frame: Any, mask: bool = True) -> dict[str, Any]:
    """A DataFrame as its columns, dtypes and rows (timing columns masked unless not `mask`)."""
    record = {
        "columns": [str(c) for c in frame.columns],
        "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()},
        "rows": [{c: _cell(v) for c, v in row.items()} for row in frame.to_dict("records")],
    }
    return masked(record) if mask else record


def masked(record: dict[str, Any]) -> dict[str, Any]:
    """A frame record with its timing columns' values replaced by placeholders."""
    rows = []
    for row in record["rows"]:
        cells = dict(row)
        for c in TIMING_COLUMNS & set(cells):
            cells[c] = _time(cells[c]) if c == "started_at" else _ms(cells[c])
        rows.append(cells)
    return {**record, "rows": rows}


def run_fields(run: cl.Run) -> dict[str, Any]:
    """The Run's own fields but its results and suite (the fingerprint stands for it)."""
    fields = every_field(run)
    for name in ("results", "suite"):
        del fields[name]
    fields["id"] = RUN_ID if re.fullmatch(r"[0-9a-f]{12}", run.id) else run.id
    fields["started_at"] = _time(fields["started_at"])
    fields["finished_at"] = _time(fields["finished_at"])
    if fields["settings"].get("store"):
        fields["settings"]["store"] = "<store path>"
    # a run computes its fingerprint only when a store needs it; the suite's own
    # fingerprint stands for the suite here, and a store's run must carry exactly it
    suite_print = fingerprint(run.suite) if run.suite is not None else ""
    assert run.fingerprint in (
        ("", suite_print) if not run.settings.get("store") else (suite_print,)
    )
    fields["fingerprint"] = "<the suite's>"  # it hashes paths: the results stand for it
    fields["suite_assertions"] = [_assertion(a) for a in fields["suite_assertions"]]
    return fields


def derived(run: cl.Run) -> dict[str, Any]:
    """Every view derived from the results: frames, stability (also per variant), summary."""
    out: dict[str, Any] = {name: frame_record(getattr(run, name)) for name in FRAMES}
    out["stability"] = frame_record(run.stability())
    out["stability_by_variant"] = frame_record(run.stability(by_variant=True))
    out["summary"] = _cell(dict(run.summary))
    return out


def rooted(value: Any) -> Any:
    """Paths inside the checkout written from its root (`<root>/examples/...`): the golden
    files hold no trace of where they were made."""
    if isinstance(value, str):
        return value.replace(str(ROOT), "<root>")
    if isinstance(value, dict):
        return {k: rooted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rooted(v) for v in value]
    return value


def project(run: cl.Run) -> dict[str, Any]:
    """Everything public about `run`, comparable across runs (see the module docstring)."""
    return rooted(_project(run))  # type: ignore[no-any-return]


def _project(run: cl.Run) -> dict[str, Any]:
    reps = suite_repetitions(run.suite)
    return {
        "run": run_fields(run),
        "results": [result_record(r, run.id, reps) for r in run.results],
        **derived(run),
    }


# --- comparing ---------------------------------------------------------------------------


def instance_label(r: dict[str, Any]) -> str:
    variant = ",".join(f"{k}={v}" for k, v in r.get("variant", {}).items())
    where = f"[{variant}]" if variant else ""
    rep = f" rep={r['repetition']}" if r.get("repetition") else ""
    return f"{r.get('case_id')}{where}{rep} run={r.get('run')}"


def _same_float(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def _walk(expected: Any, found: Any, path: str) -> Iterator[str]:
    if isinstance(expected, dict) and isinstance(found, dict):
        for key in [*expected, *(k for k in found if k not in expected)]:
            if key not in found:
                yield f"{path}.{key}: expected {expected[key]!r}, missing"
            elif key not in expected:
                yield f"{path}.{key}: not expected, found {found[key]!r}"
            else:
                yield from _walk(expected[key], found[key], f"{path}.{key}")
        return
    if isinstance(expected, list) and isinstance(found, list):
        named = bool(expected) and isinstance(expected[0], dict) and "case_id" in expected[0]
        if named or path.rsplit(".", 1)[-1] in ("results", "rows"):
            yield from _rows(expected, found, path)
            return
        for i, (e, f) in enumerate(zip(expected, found, strict=False)):
            yield from _walk(e, f, f"{path}[{i}]")
        if len(expected) != len(found):
            yield f"{path}: expected {len(expected)} items, found {len(found)}"
        return
    numbers = all(isinstance(v, float | int) and not isinstance(v, bool) for v in (expected, found))
    if numbers and type(expected) is type(found) and _same_float(expected, found):
        return
    if expected != found or type(expected) is not type(found):
        yield f"{path}: expected {expected!r}, found {found!r}"


def _rows(expected: list[Any], found: list[Any], path: str) -> Iterator[str]:
    """Results and frame rows are named by their instance, so a diff says which one."""

    def label(i: int, row: Any) -> str:
        if not (isinstance(row, dict) and "case_id" in row):
            return str(i)
        if isinstance(row.get("turns"), list):  # a result: named by its instance key
            return instance_label(row)
        run = f" run={row['run']}" if "run" in row else ""
        return f"row {i}: {row['case_id']}{run}"

    for i, (e, f) in enumerate(zip(expected, found, strict=False)):
        yield from _walk(e, f, f"{path}[{label(i, e)}]")
    if len(expected) != len(found):
        more = found[len(expected) :] or expected[len(found) :]
        names = [label(len(expected) + i, r) for i, r in enumerate(more)][:5]
        yield f"{path}: expected {len(expected)} rows, found {len(found)} (e.g. {names})"


def differences(expected: Any, found: Any, where: str = "") -> list[str]:
    """Every field where `found` differs from `expected`, one readable line each."""
    out = []
    for line in _walk(expected, found, where):
        out.append(line.lstrip("."))
    return out


def explain(diffs: list[str], what: str, limit: int = 25) -> str:
    """A failure message: what was compared and the first `limit` differences."""
    head = f"{what}: {len(diffs)} field(s) differ"
    more = [f"... and {len(diffs) - limit} more"] if len(diffs) > limit else []
    return "\n".join([head, *(f"  {d}" for d in diffs[:limit]), *more])


# --- the example suites ------------------------------------------------------------------


def run_example(folder: str, runs: int, **options: Any) -> cl.Run:
    """Run one example suite as tests/test_examples.py does (its demo agent and simulator)."""
    spec = EXPECTED[folder]
    suite = cl.load(EXAMPLES / spec["path"])
    agent = as_agent(spec["agent"])
    return cl.run(suite, agent, simulator=spec["simulator"], progress=False, runs=runs, **options)


def golden_path(folder: str) -> Path:
    return GOLDEN / f"{folder}.json"


MANY_KEYS = ("run", "df", "stability", "stability_by_variant", "summary")
"""What the runs=3 record keeps: the views that count repetitions (the per-turn frames and
the results of run k are run 0's again, with the run index k)."""


def record_example(folder: str) -> dict[str, Any]:
    """The golden record of one example: runs=1's results and every derived view, and the
    views of runs=3 that count repetitions."""
    once = project(run_example(folder, 1))
    many = project(run_example(folder, max(RUNS)))
    return {
        "example": folder,
        "agent": EXPECTED[folder]["agent"],
        "simulator": EXPECTED[folder]["simulator"],
        "results": once.pop("results"),
        "runs=1": once,
        f"runs={max(RUNS)}": {k: many[k] for k in MANY_KEYS},
    }


def repeated(results: list[dict[str, Any]], runs: int) -> list[dict[str, Any]]:
    """run=0's results as a run with `runs` repetitions holds them: run by run, suite order."""
    return [dict(r, run=k) for k in range(runs) for r in results]


def example_differences(
    golden: dict[str, Any], once: dict[str, Any], many: dict[str, Any] | None = None
) -> list[str]:
    """Where projections of a runs=1 run (and of a runs=3 run) differ from the golden record."""
    diffs = differences(golden["results"], once["results"], "results")
    diffs += differences(golden["runs=1"], _without_results(once), "runs=1")
    if many is not None:
        runs = max(RUNS)
        expected = repeated(golden["results"], runs)
        diffs += differences(expected, many["results"], f"runs={runs}.results")
        kept = {k: many[k] for k in MANY_KEYS}
        diffs += differences(golden[f"runs={runs}"], kept, f"runs={runs}")
    return diffs


def _without_results(projection: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in projection.items() if k != "results"}


def dumps(record: dict[str, Any]) -> str:
    """Indented JSON, but each result and frame row on one line (small, greppable diffs)."""
    marker = "\x00row\x00"

    def mark(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: mark(v, k) for k, v in value.items()}
        if isinstance(value, list) and key in ("results", "rows"):
            return [marker + json.dumps(v, ensure_ascii=False, sort_keys=False) for v in value]
        return value

    text = json.dumps(mark(record), ensure_ascii=False, indent=1)
    return re.sub(r'"\\u0000row\\u0000(.*)"(,?)$', _unquote, text, flags=re.M) + "\n"


def _unquote(m: re.Match[str]) -> str:
    return json.loads(f'"{m.group(1)}"') + m.group(2)


def load_golden(folder: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(golden_path(folder).read_text(encoding="utf-8"))
    return data


def main(argv: list[str]) -> int:
    update = "--update" in argv
    status = 0
    for folder in sorted(EXPECTED):
        if update:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            golden_path(folder).write_text(dumps(record_example(folder)), encoding="utf-8")
            print(f"wrote {golden_path(folder).relative_to(ROOT)}")
            continue
        once, many = (plain(project(run_example(folder, n))) for n in RUNS)
        diffs = example_differences(load_golden(folder), once, many)
        print(explain(diffs, folder) if diffs else f"{folder}: same as its golden file")
        status |= bool(diffs)
    return status


def plain(projection: Any) -> Any:
    """The projection as read back from JSON (tuples become lists), as the golden file is."""
    return json.loads(json.dumps(projection, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
