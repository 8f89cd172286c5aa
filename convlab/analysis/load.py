"""Reading a run back: `load_run` of a `.json` or `.jsonl` save (convlab.analysis.io says
what each holds), a Yao report, or an engine results store (convlab.engine.store).

Every problem is reported with its file, line and field, and one never hides another; a
store's unreadable result line is left out with a warning instead, as a resumed run leaves it.
"""

from __future__ import annotations

import gzip
import json
import numbers
import os
import warnings
import zlib
from pathlib import Path
from typing import Any

import msgspec

from convlab._history import locate
from convlab.engine._gc import paused_gc
from convlab.engine.store import END_FIELDS, RESULT_PREFIX, result_line
from convlab.errors import SuiteError
from convlab.formats import Problems
from convlab.model._legacy import upgrade
from convlab.model.codec import FORMAT, check_format, convert
from convlab.model.records import CaseResult
from convlab.model.results import Results
from convlab.model.run import Run

__all__ = ["load_run", "run_from_dict"]

_DERIVED = ("stability", "summary")
_STORED = RESULT_PREFIX.decode() + '"case_id":'
"""How a store's result line starts (a `.jsonl` save's names Yao's `id` first)."""
_YAO_EXTRAS = ("output", "trace", "input", "expected", "options", "metadata")
_SEED_JSON_KEYS = ("summary", "environment", "stability_results", "metadata")
"""Yao's report keys in `.json`: derived from the results, dropped on reading."""
_SEED_RESULT_KEYS = ("id", "input", "output")
_GZIP = b"\x1f\x8b"


def _read(path: Path) -> bytes:
    if not path.is_file():
        raise SuiteError.one(str(path), None, "", "no such results file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SuiteError.one(str(path), None, "", f"cannot read: {exc.strerror}") from None


def load_run(path: str | os.PathLike[str] | int) -> Run:
    """Read a run saved by `Run.save` (`.json` or `.jsonl`) or an engine results store (any
    of them gzip-compressed, `.gz`), or the run a history id names (`cl.history()`'s `id`).

    A store's result line that cannot be read (not UTF-8, not JSON, not a result) is left
    out with a warning naming its line, as a resumed run leaves it out; in a saved run every
    such line is an error.

    Raises:
        SuiteError: With every problem found (file, line, field path, message).
        HistoryError: For a history id that is not recorded, or whose files are gone.
    """
    if isinstance(path, int | numbers.Integral):
        if isinstance(path, bool):
            raise TypeError("load_run() takes a path or a history id, not a bool")
        return _recorded(int(path))
    p = Path(path)
    data = _read(p)
    with paused_gc():
        return _parse(p, data)


def _recorded(history_id: int) -> Run:
    """The run history entry `history_id` keeps: from its store or kept copy, else from its
    save. A store written again after the run (resumed or overwritten by a later run) is
    read as it is now, with a warning."""
    entry = locate(history_id)
    first: SuiteError | None = None
    for path in entry.paths:
        try:
            run = load_run(path)
        except SuiteError as exc:  # a damaged file: its save may still be read
            first = first or exc
            continue
        if (
            entry.kind == "store"
            and path == entry.results_path
            and (run.finished_at != entry.finished_at)
        ):
            warnings.warn(
                f"history run {history_id}: its store {path} was written again after it (it "
                f"now holds a run that ended at {run.finished_at}); that is what is loaded",
                RuntimeWarning,
                stacklevel=3,
            )
        return run
    assert first is not None
    raise first


def _parse(p: Path, data: bytes) -> Run:
    if data[:2] == _GZIP:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise SuiteError.one(str(p), None, "", f"not a readable gzip file: {exc}") from None
        p = p.with_suffix("") if p.suffix.lower() == ".gz" else p
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
            if isinstance(parsed, dict) and parsed.get("type") == "convlab.experiment":
                raise SuiteError.one(
                    str(p),
                    None,
                    "",
                    "this file holds an experiment (a run per variant): read it with "
                    "convlab.load_experiment(path), and a variant's run as its [name]",
                )
            return _from_json(p, parsed)
    return _from_lines(p, data)


def run_from_dict(path: Path, data: Any, where: str = "") -> Run:
    """The Run a saved run's JSON object describes (as in a `.json` save), checked: what an
    experiment's save holds for each variant.

    Raises:
        SuiteError: With every problem found (`path`, field, message).
    """
    if not isinstance(data, dict):
        raise SuiteError.one(str(path), None, where, "a saved run is a JSON object (the Run)")
    return _from_json(path, data)


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
            results.add_read(encoded, result)
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
