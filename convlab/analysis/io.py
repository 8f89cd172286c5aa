"""Saving a Run and reading it back, losslessly: `.json` and `.jsonl` (JSON Lines).

`.json` is Yao's JSON report object with the Run model folded in, so
jq scripts written for `yao agent test -o report.json` keep working and nothing is lost:

    {"summary": {total, passed, failed, skipped, errors, timeouts, duration_ms, agent_id, ...},
     "results": [{"id", "input", "output", ...every CaseResult field...}],
     "stability_results": [...]  (only when a case ran more than once),
     "metadata": {"started_at", "completed_at", "version"},
     ...every other Run field (format_version, suite, agent, settings, status, ...)}

It is indented, with each result on one line (its record's encoding, convlab.model.codec: one
line per instance greps well). Yao's report keys are derived (from `results`), so `load_run`
drops them and checks the rest as the Run;
a `.json` holding only the Run model (older convlab) loads too, and so does a Yao report
(results keyed by `id`, read as in `.jsonl`). Yao's `environment` block is left out:
convlab has no user/team/locale context to report.

The `.jsonl` layout keeps Yao's `.jsonl` record types (start, result, stability, summary),
so `jq 'select(.type == "summary")'` works, and adds what a lossless reload needs:

    {"type": "start", "timestamp", "agent_id", "total_cases", "run": {the Run without results}}
    {"type": "result", "id": <case id>, "output": <last reply>, ...every CaseResult field...}
    {"type": "stability", "id", "runs", "passed", "failed", "pass_rate", "stable", ...} per case
    {"type": "summary", "total", "passed", "failed", "skipped", "errors", "timeouts", ...}

`load_run` reads that, a `.json` Run, and an engine results store (convlab.engine.store: a
`{"type": "header", "run": {...}}` line, then one `result` line per finished instance; a record
torn by a crash is skipped, as the store's own reader does; when a resumed store holds an
instance twice, the frames use the latest). `stability` and `summary` lines are
derived, so they are skipped and recomputed. Yao-style `result` lines without a `case_id` (as
Yao writes them) are read too: `id` becomes the case id, `output`/`trace` go to `metadata`.
"""

from __future__ import annotations

import json
import math
import os
import uuid
import warnings
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from convlab._util import folder_for
from convlab.engine._gc import paused_gc
from convlab.engine.store import END_FIELDS, RESULT_PREFIX, result_line
from convlab.errors import SuiteError
from convlab.formats import Problems
from convlab.model._legacy import upgrade
from convlab.model.codec import FORMAT, check_format, convert, encode, wrapped
from convlab.model.records import CaseResult
from convlab.model.results import Results
from convlab.model.run import Run

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SAVERS",
    "json_report",
    "json_text",
    "jsonl_lines",
    "load_run",
    "register_saver",
    "save",
    "write_atomic",
]

Saver = Callable[[Run, Path], None]
SAVERS: dict[str, Saver] = {}
"""Writers by file suffix; report modules register more (`.md`, `.html`, `.ipynb`, `.xml`)."""
_REPORTS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}
_REPORTS |= {".ipynb": "notebook", ".xml": "junit"}
"""Suffix -> the convlab.report module that registers its saver, imported on first use: the
report modules pull in plotly, itables and nbclient, which `import convlab` must not."""
_DERIVED = ("stability", "summary")
_STORED = RESULT_PREFIX.decode() + '"case_id":'
"""How a store's result line starts (a `.jsonl` save's names Yao's `id` first)."""
_YAO_EXTRAS = ("output", "trace", "input", "expected", "options", "metadata")
_SEED_JSON_KEYS = ("summary", "environment", "stability_results", "metadata")
"""Yao's report keys in `.json`: derived from the results, dropped on reading."""
_SEED_RESULT_KEYS = ("id", "input", "output")


def register_saver(*suffixes: str) -> Callable[[Saver], Saver]:
    """Register a function `(run, path) -> None` that writes files with these suffixes."""

    def deco(fn: Saver) -> Saver:
        for s in suffixes:
            SAVERS[s.lower()] = fn
        return fn

    return deco


def _deferred(suffix: str, module: str) -> Saver:
    """A placeholder saver that imports its report module, which registers the real one."""

    def saver(run: Run, path: Path) -> None:
        import importlib

        importlib.import_module(f"convlab.report.{module}")
        real = SAVERS[suffix]
        if real is saver:
            raise RuntimeError(f"convlab.report.{module} registered no saver for {suffix}")
        real(run, path)

    return saver


for _suffix, _module in _REPORTS.items():
    SAVERS[_suffix] = _deferred(_suffix, _module)


def save(run: Run, path: str | os.PathLike[str]) -> Path:
    """Write `run` to `path`; the suffix picks the format. Returns the path written."""
    target = Path(path)
    suffix = target.suffix.lower()
    saver = SAVERS.get(suffix)
    if saver is None:
        supported = ", ".join(sorted(SAVERS))
        reason = f"unknown suffix {suffix or '(none)'!r}"
        raise ValueError(f"cannot save {str(target)!r}: {reason}; supported suffixes: {supported}")
    folder_for(target)
    saver(run, target)
    return target


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder (its own name, so two writers never
    share it): a crash or a failure never leaves half a file behind. An OSError names `path`
    (a full disk or a size limit otherwise names no file)."""
    folder_for(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with tmp.open("x", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@register_saver(".json")
def _save_json(run: Run, path: Path) -> None:
    write_atomic(path, json_text(run))


def _version() -> str:
    """convlab's installed version (the top package is a layer above this one)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("convlab")
    except PackageNotFoundError:
        return ""


def with_fields(head: dict[str, Any], record: CaseResult) -> str:
    """One result as a save writes it: `head`'s keys (a `type`, Yao's `id`, ...), then
    the record's own encoding."""
    return wrapped(head, encode(record)).decode()


def _seed_keys(r: CaseResult) -> dict[str, Any]:
    """Yao's `id`, `input` (the messages the first turn sent) and `output` of a result."""
    first = r.turns[0].messages if r.turns else None
    sent = None if first is None else [m.model_dump(mode="json", exclude_none=True) for m in first]
    return {"id": r.case_id, "input": sent, "output": _output(r)}


def _json_head(run: Run) -> dict[str, Any]:
    """The `.json` object without its results (they go in where `"results"` is)."""
    from convlab.analysis.frames import instances_frame, suite_order
    from convlab.analysis.stats import stability, summary

    df = instances_frame(run)
    stab = stability(df, order=suite_order(run))
    summ = _summary_record(run, df, summary(df, stab))
    del summ["type"]
    out: dict[str, Any] = {"summary": {**summ, "agent_id": run.agent}, "results": []}
    if summ["runs_per_case"] > 1:
        stab_rows = [_stability_record(row) for row in stab.to_dict("records")]
        out["stability_results"] = [{k: v for k, v in r.items() if k != "type"} for r in stab_rows]
    out["metadata"] = {
        "started_at": run.started_at,
        "completed_at": run.finished_at,
        "version": _version(),
    }
    return out | run.to_dict(exclude=("results",))


def json_text(run: Run) -> str:
    """The `.json` file: indented, with one result per line."""
    marker = f"results-{uuid.uuid4().hex}"
    head = json.dumps({**_json_head(run), "results": marker}, ensure_ascii=False, indent=2)
    lines = ",\n".join("    " + with_fields(_seed_keys(r), r) for r in run.results)
    results = f"[\n{lines}\n  ]" if run.results else "[]"
    return head.replace(f'"{marker}"', results, 1) + "\n"


def json_report(run: Run) -> dict[str, Any]:
    """The `.json` object: Yao's `summary`/`results`/`metadata` keys plus the Run."""
    return {
        **_json_head(run),
        "results": [{**_seed_keys(r), **r.to_dict()} for r in run.results],
    }


def _plain(value: Any) -> Any:
    """NaN becomes None (JSON has no NaN)."""
    return None if isinstance(value, float) and math.isnan(value) else value


def _output(r: CaseResult) -> Any:
    """The last reply of an instance, as Yao's `output` (text, else data)."""
    for t in reversed(r.turns):
        if t.observation is not None:
            return t.observation.text if t.observation.text is not None else t.observation.data
    return None


def _stability_record(row: dict[Any, Any]) -> dict[str, Any]:
    seed = {
        "type": "stability",
        "id": row["case_id"],
        "runs": row["runs"],
        "passed": row["passed"],
        "failed": row["runs"] - row["passed"],  # Yao: every counted run that did not pass
        "pass_rate": row["pass_rate"],
        "stable": row["classification"] == "stable",
        "stability_class": row["classification"],
        "avg_duration_ms": row["duration_mean_ms"],
    }
    extra = {k: v for k, v in row.items() if k not in ("case_id", "passed", "runs", "pass_rate")}
    return {k: _plain(v) for k, v in {**seed, **extra, "failed_status": row["failed"]}.items()}


def _wall_ms(run: Run, df: pd.DataFrame) -> float:
    """Wall time of the run from its timestamps, else the sum of instance durations."""
    try:
        start = datetime.fromisoformat(run.started_at or "")
        end = datetime.fromisoformat(run.finished_at or "")
        return (end - start).total_seconds() * 1000
    except (TypeError, ValueError):
        return float(df["duration_ms"].sum()) if len(df) else 0.0


def _summary_record(run: Run, df: pd.DataFrame, summ: dict[str, Any]) -> dict[str, Any]:
    per_case = df.groupby(["case_id", "variant"]).size() if len(df) else None
    extra = {
        "duration_ms": _wall_ms(run, df),
        "overall_pass_rate": summ["pass_rate"],
        "runs_per_case": int(per_case.max()) if per_case is not None else 0,
        "total_runs": len(df),
    }
    return {"type": "summary", **summ, **extra}


def jsonl_lines(run: Run) -> list[str]:
    """The `.jsonl` lines of a run: start, one result per record, stability per case, summary."""
    from convlab.analysis.frames import instances_frame, suite_order
    from convlab.analysis.stats import stability, summary

    df = instances_frame(run)
    stab = stability(df, order=suite_order(run))
    header = run.to_dict(exclude=("results",))
    start = {"type": "start", "timestamp": run.started_at, "agent_id": run.agent}
    first = {**start, "total_cases": int(df["case_id"].nunique()), "run": header}
    tail = [_stability_record(row) for row in stab.to_dict("records")]
    tail.append(_summary_record(run, df, summary(df, stab)))
    results = (
        with_fields({"type": "result", "id": r.case_id, "output": _output(r)}, r)
        for r in run.results
    )
    return [_dumps(first), *results, *map(_dumps, tail)]


@register_saver(".jsonl")
def _save_jsonl(run: Run, path: Path) -> None:
    write_atomic(path, "".join(line + "\n" for line in jsonl_lines(run)))


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, default=str)


def _read(path: Path) -> bytes:
    if not path.is_file():
        raise SuiteError.one(str(path), None, "", "no such results file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SuiteError.one(str(path), None, "", f"cannot read: {exc.strerror}") from None


def load_run(path: str | os.PathLike[str]) -> Run:
    """Read a run saved by `Run.save` (`.json` or `.jsonl`) or an engine results store.

    A store's result line that cannot be read (not UTF-8, not JSON, not a result) is left
    out with a warning naming its line, as a resumed run leaves it out; in a saved run every
    such line is an error.

    Raises:
        SuiteError: With every problem found (file, line, field path, message).
    """
    p = Path(path)
    data = _read(p)
    with paused_gc():
        return _parse(p, data)


def _parse(p: Path, data: bytes) -> Run:
    if p.suffix.lower() == ".json":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise SuiteError.one(str(p), line, "", f"not UTF-8 text: {exc.reason}") from None
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":  # several JSON values: JSON Lines under a .json name
                raise SuiteError.one(str(p), exc.lineno, "", f"not JSON: {exc.msg}") from None
        else:
            return _from_json(p, parsed)
    return _from_lines(p, data)


def _from_json(path: Path, data: Any) -> Run:
    problems = Problems(str(path))
    if not isinstance(data, dict):
        problems.add(1, "", "a saved run is a JSON object (the Run)")
        problems.raise_if_any()
    version = check_format(data.get("format_version"), str(path))
    data = {k: v for k, v in data.items() if k not in _SEED_JSON_KEYS}
    results = Results()
    raw = data.pop("results", [])
    if not isinstance(raw, list):
        problems.add(None, "results", "must be a list of results")
        raw = []
    for n, rec in enumerate(raw):
        result = _result(rec, version, None, problems, f"results[{n}]")
        if result is not None:
            results.append(result)
    run = _run(data, None, problems, "")
    problems.raise_if_any()
    assert run is not None
    run.results = results
    return run


def _run(data: dict[str, Any], line: int | None, problems: Problems, where: str) -> Run | None:
    """The Run `data` describes (without results), checked; None when it has problems."""
    try:
        run = convert({**data, "results": []}, Run)
    except msgspec.ValidationError as exc:
        problems.add(line, *_invalid(where, exc))
        return None
    run.format_version = FORMAT  # it holds results as this code's records now
    return run


def _invalid(where: str, exc: Exception) -> tuple[str, str]:
    """A decode error's field and message (`... - at `$.turns[0].status``), below `where`."""
    text = str(exc)
    message, _, at = text.rpartition(" - at `")
    path = at.rstrip("`").removeprefix("$").lstrip(".") if message else ""
    return ".".join(p for p in (where, path) if p), message or text


def _result(
    rec: Any, version: int, line: int | None, problems: Problems, where: str = ""
) -> CaseResult | None:
    """The record a saved result describes (a convlab result, or a Yao one without a
    `case_id`), checked; None when it has problems (recorded)."""
    if not isinstance(rec, dict):
        problems.add(line, where, "a result is a JSON object")
        return None
    if "case_id" in rec:
        body = {k: v for k, v in rec.items() if k not in _SEED_RESULT_KEYS and k != "type"}
        if version != FORMAT:
            body = upgrade(body)
    else:
        body = _yao_body(rec)
    try:
        return convert(body, CaseResult)
    except msgspec.ValidationError as exc:
        problems.add(line, *_invalid(where, exc))
        return None


def _yao_body(rec: dict[str, Any]) -> dict[str, Any]:
    """A result as Yao writes it (no `case_id`): `id` is the case id, the rest is metadata."""
    meta = {k: rec[k] for k in _YAO_EXTRAS if k in rec}
    body = {"case_id": rec.get("id"), "status": rec.get("status"), "metadata": meta}
    return body | {k: rec[k] for k in ("duration_ms", "error") if k in rec}


def _from_lines(path: Path, data: bytes) -> Run:
    problems = Problems(str(path))
    header: Run | None = None
    version = FORMAT
    stored = False
    """Whether the file is an engine results store (its first record a `header`)."""
    left_out: list[str] = []
    end: tuple[int, dict[str, Any]] | None = None
    results = Results()

    def unreadable(n: int, why: str, field: str = "") -> None:
        """A line that cannot be read: left out of a store (as a resume does), else an
        error."""
        if stored:
            left_out.append(f"line {n}{f' ({field})' if field else ''}: {why}")
        else:
            problems.add(n, field, why)

    # JSON Lines end at "\n" only: splitting at other line breaks would also break inside a
    # JSON string holding U+2028, U+0085 or a form feed, which json.dumps writes as they are
    lines = data.split(b"\n")
    last = len(lines) - (1 if data.endswith(b"\n") else 0)
    for n, line in enumerate(lines, 1):
        try:
            raw = line.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError as exc:
            unreadable(n, f"not UTF-8 text: {exc.reason} at byte {exc.start + 1}")
            continue
        if not raw.strip():
            continue
        if raw.startswith(_STORED):  # a store's result line: its record, as the store reads it
            try:
                result, encoded = result_line(line, version)
            except msgspec.ValidationError as exc:
                field, why = _invalid("", exc)
                unreadable(n, why, field)
                continue
            except (msgspec.DecodeError, json.JSONDecodeError) as exc:
                if n < last:  # a torn last record is a crash mid-write (the engine skips it)
                    unreadable(n, f"not JSON: {exc}")
                continue
            results.add_line(encoded, result.status)
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            if n < last:  # a torn last line
                unreadable(n, f"not JSON: {exc.msg} (column {exc.colno})")
            continue
        kind = rec.get("type") if isinstance(rec, dict) else None
        if kind in ("start", "header"):
            if header is None:
                body = rec.get("run")
                if isinstance(body, dict):
                    version = check_format(body.get("format_version"), f"{path}:{n}")
                header = _header(rec, n, problems)
                stored = kind == "header"
        elif kind == "result":
            found = _result(rec, version, n, problems)
            if found is not None:
                results.append(found)
        elif kind == "summary" and isinstance(rec.get("run"), dict):
            end = (n, rec["run"])  # a store's end: how its run ended (the last one counts)
        elif kind not in _DERIVED:
            want = "start, header, result, stability or summary"
            problems.add(n, "type", f"unknown record type {kind!r}; expected {want}")
    run = header or Run()
    if end is not None:
        _ended(run, *end, problems)
    problems.raise_if_any()
    if left_out:
        warnings.warn(
            f"{path}: {len(left_out)} stored line(s) could not be read and are left out "
            f"(a resumed run would run them again): {'; '.join(left_out[:3])}",
            RuntimeWarning,
            stacklevel=3,
        )
    run.results = results
    return run


def _header(rec: dict[str, Any], line: int, problems: Problems) -> Run | None:
    """The Run a `start`/`header` record describes (without results)."""
    body = rec.get("run")
    if body is None:  # a Yao start line: only the agent and the time
        return Run(agent=str(rec.get("agent_id") or ""), started_at=rec.get("timestamp"))
    if not isinstance(body, dict):
        problems.add(line, "run", "must be an object (the Run without results)")
        return None
    return _run(body, line, problems, "run")


def _ended(run: Run, line: int, end: dict[str, Any], problems: Problems) -> None:
    """Put a store's end record (`ResultStore.close`) over the header's run fields."""
    fields = {k: v for k, v in end.items() if k in END_FIELDS}
    ended = _run(fields, line, problems, "run")
    if ended is None:
        return
    for name in fields:
        setattr(run, name, getattr(ended, name))
