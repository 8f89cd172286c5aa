"""Saving a Run, losslessly: `.json` and `.jsonl` (JSON Lines); convlab.analysis.load reads
them back.

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

`load_run` (convlab.analysis.load) reads that, a `.json` Run, and an engine results store
(convlab.engine.store: a `{"type": "header", "run": {...}}` line, then one `result` line per
finished instance; a record torn by a crash is skipped, as the store's own reader does; when
a resumed store holds an instance twice, the frames use the latest). `stability` and
`summary` lines are derived, so they are skipped and recomputed. Yao-style `result` lines
without a `case_id` (as Yao writes them) are read too: `id` becomes the case id,
`output`/`trace` go to `metadata`.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlab._files import folder_for
from convlab._history import note_saved
from convlab.model.codec import encode, json_cell, wrapped
from convlab.model.records import CaseResult
from convlab.model.run import Run
from convlab.registry import Registry

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SAVERS",
    "Saver",
    "json_report",
    "json_text",
    "jsonl_lines",
    "register_saver",
    "save",
    "saver_key",
    "suffixes",
    "write_atomic",
]

Saver = Callable[[Any, Path], None]
"""A writer `(what, path) -> None` of a Run, an Experiment or a Comparison."""
SAVERS: Registry[Saver] = Registry("file format")
"""Every writer, keyed by what it saves and the file suffix (`saver_key`): `run.json`,
`run.html`, `experiment.md`, ... Report modules register theirs (`.md`, `.html`, `.ipynb`,
`.xml`) when first used."""
_REPORTS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}
_REPORTS |= {".ipynb": "notebook", ".xml": "junit"}
_DEFERRED = {("run", suffix): f"convlab.report.{module}" for suffix, module in _REPORTS.items()}
_DEFERRED |= {
    ("experiment", s): "convlab.report.experiment" for s in (".html", ".htm", ".md", ".markdown")
}
_DEFERRED[("experiment", ".json")] = "convlab.analysis.experiment_io"
_DEFERRED |= {("comparison", s): "convlab.report.markdown" for s in (".md", ".markdown")}
"""(what, suffix) -> the module that registers its saver, imported on first use: the report
modules pull in plotly, itables and nbclient, which `import convlab` must not."""
_LOSSLESS = (".json", ".jsonl")
"""Saves `load_run` reads back whole: a recorded run's history entry notes them."""


def saver_key(what: str, suffix: str) -> str:
    """The registry key of the writer of `what` ("run", "experiment", "comparison") as
    files with `suffix`: `run.json`."""
    return f"{what}{suffix.lower()}"


def suffixes(what: str) -> list[str]:
    """The suffixes `what` can be saved as, sorted."""
    return sorted(name[len(what) :] for name in SAVERS if name.startswith(f"{what}."))


def register_saver(*suffixes: str, what: str = "run") -> Callable[[Saver], Saver]:
    """Register a function `(obj, path) -> None` that writes `what` ("run", "experiment",
    "comparison") as files with these suffixes."""

    def deco(fn: Saver) -> Saver:
        for suffix in suffixes:
            SAVERS.add(saver_key(what, suffix), fn)
        return fn

    return deco


def _deferred(key: str, module: str) -> Saver:
    """A placeholder saver that imports its report module, which registers the real one."""

    def saver(obj: Any, path: Path) -> None:
        import importlib

        importlib.import_module(module)
        real = SAVERS.get(key)
        if real is saver:
            raise RuntimeError(f"{module} registered no saver for {key}")
        real(obj, path)

    return saver


for (_what, _suffix), _module in _DEFERRED.items():
    SAVERS.add(saver_key(_what, _suffix), _deferred(saver_key(_what, _suffix), _module))


def save(obj: Any, path: str | os.PathLike[str], what: str = "run") -> Path:
    """Write `obj` (a Run, or the `what` it is: "experiment", "comparison") to `path`; the
    suffix picks the format. Returns the path written."""
    target = Path(path)
    suffix = target.suffix.lower()
    saver = SAVERS.find(saver_key(what, suffix))
    if saver is None:
        supported = ", ".join(suffixes(what))
        reason = f"unknown suffix {suffix or '(none)'!r}"
        raise ValueError(
            f"cannot save the {what} as {str(target)!r}: {reason}; supported suffixes: {supported}"
        )
    folder_for(target)
    saver(obj, target)
    if what == "run" and suffix in _LOSSLESS:  # the history reads a recorded run back from here
        note_saved(obj, target)
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
    return {k: json_cell(v) for k, v in {**seed, **extra, "failed_status": row["failed"]}.items()}


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
