"""Recording a finished run: its row in the history database, and its results kept where
`load_run(history_id)` finds them.

A run with a results store is found in its store. Any other run's results are written as a
closed store, gzip-compressed, to `runs/<run id>.jsonl.gz` beside the database: about 160
bytes per passed single-turn instance with three checks, plus the suite once per run. A
later `run.save()` to `.json` or `.jsonl` is noted too (`saved_path`), and read when the
first file is gone.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import uuid
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from convlab._history import _background, _db
from convlab._history.row import HistoryRow
from convlab.agents._secret import known_secrets
from convlab.engine.store import write_run
from convlab.errors import HistoryError
from convlab.model.run import Run

__all__ = [
    "Entry",
    "locate",
    "note_saved",
    "prune",
    "record_later",
    "record_run",
    "runs_folder",
    "usable",
]

_SECRET_KEY = re.compile(
    r"(?i)^(.*[_-])?(api[_-]?key|apikey|key|password|passwd|secret|token|authorization|bearer|"
    r"credentials?|cookie)$"
)
"""Setting names whose values are never written (`max_tokens` is not one)."""
_LEVEL = 1
"""gzip level of a kept copy: level 6 writes a sixth fewer bytes in twice the time."""


def runs_folder() -> Path:
    """Where the results of runs with no store are kept (`runs/` in CONVLAB_HOME)."""
    return _db.home() / "runs"


def _masked(value: Any, secrets: list[str]) -> Any:
    """`value` with the values of secret-looking keys and the known secrets
    (`convlab.agents._secret.known_secrets`, which the engine masks in the run already)
    replaced by `***`: the second lock."""
    if isinstance(value, dict):
        return {
            k: "***" if _SECRET_KEY.match(str(k)) and v else _masked(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_masked(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "***")
    return value


def _suite_path(run: Run) -> str | None:
    """The absolute path the suite was read from: its file, or the folder of its files."""
    files = [s.file for s in run.suite.sources] if run.suite is not None else []
    if not files:
        return None
    paths = [os.path.abspath(f) for f in files]
    return paths[0] if len(set(paths)) == 1 else os.path.commonpath(paths)


def _keep(run: Run) -> tuple[str, Literal["store", "copy"], str]:
    """Where `run`'s results are found (its store, else a kept copy written now), what that
    is (`store` or `copy`) and the suite's fingerprint. The copy is written from the run's
    own results, a line at a time: no second form of them is made."""
    store = run.settings.get("store")
    fingerprint = run.fingerprint
    if store:
        return os.path.abspath(store), "store", fingerprint
    folder = _db.private_folder(runs_folder())
    target = folder / f"{run.id or uuid.uuid4().hex[:12]}.jsonl.gz"
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        _db.private_file(tmp)
        with (
            open(tmp, "r+b") as out,
            gzip.GzipFile(fileobj=out, mode="wb", compresslevel=_LEVEL) as raw,
            io.BufferedWriter(raw, 1 << 20) as fh,  # type: ignore[arg-type]
        ):
            fingerprint = write_run(run, fh.write)  # buffered: one compress call per MB
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return str(target), "copy", fingerprint


def _number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return None if out != out else out  # NaN: no figure


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("convlab")
    except PackageNotFoundError:
        return ""


def _row(run: Run, experiment: str | None, variant: str | None) -> HistoryRow:
    """The history row of `run` (secrets masked), its results kept where they are found."""
    secrets = known_secrets()
    summary = dict(run.summary)
    agent_settings = dict(getattr(run, "agent_settings", None) or {})
    where, kind, fingerprint = _keep(run)
    model = agent_settings.get("model")
    return HistoryRow(
        run_id=run.id or uuid.uuid4().hex[:12],
        recorded_at=datetime.now().astimezone().isoformat(timespec="milliseconds"),
        started_at=run.started_at,
        finished_at=run.finished_at,
        status=run.status,
        suite=(run.suite.name or run.suite.id) if run.suite is not None else None,
        suite_path=_suite_path(run),
        fingerprint=fingerprint or None,
        agent=_masked(run.agent, secrets),
        model=_masked(str(model), secrets) if model else None,
        agent_settings=_masked(agent_settings, secrets),
        total=summary.get("total"),
        passed=summary.get("passed"),
        failed=summary.get("failed"),
        errors=summary.get("errors"),
        pass_rate=_number(summary.get("pass_rate")),
        cost_usd=_number(summary.get("cost_usd")),
        runs=run.settings.get("runs"),
        parallel=run.settings.get("parallel"),
        experiment=experiment,
        variant=variant,
        results_path=where,
        results_kind=kind,
        summary=_masked(summary, secrets),
        settings=_masked(run.settings, secrets),
        convlab_version=_version(),
    )


def _failed(run: Run, why: str, stacklevel: int) -> None:
    """Say that `run`'s entry was not written, and why (a warning; `run.settings`)."""
    run.settings["history"] = {"written": False, "error": why}
    warnings.warn(
        f"run {run.id}: its history entry was not written: {why}",
        RuntimeWarning,
        stacklevel=stacklevel + 1,
    )


def record_run(
    run: Run,
    *,
    experiment: str | None = None,
    variant: str | None = None,
    keep: int | None = None,
) -> int | None:
    """Record a finished run in the history database; its history id, or None when the
    entry could not be written. `keep`: then delete all but the newest `keep` entries (and
    their copies in `runs/`); None keeps every entry.

    Recording never stops a run: a damaged or newer database, a full disk or a folder that
    cannot be written is a warning naming the file, and `run.settings["history"]` says the
    entry was not written. Recording a run again updates its entry (an experiment or variant
    name given now is added to it).
    """
    if not isinstance(run, Run):
        raise TypeError(f"record_run() takes a Run, not {type(run).__name__}")
    kept: str | None = None
    try:
        with _db.connect() as conn:  # a damaged database is found before anything is written
            assert conn is not None
            row = _row(run, experiment, variant)
            kept = row.results_path if row.results_kind == "copy" else None
            hid = _db.insert(conn, row)
            kept = None
            if keep is not None:
                _remove(_db.prune(conn, keep))
            return hid
    except Exception as exc:  # a history problem is never the run's
        if kept is not None:
            Path(kept).unlink(missing_ok=True)
        _failed(run, str(_db.explain(_db.db_path(), exc)), 2)
        return None


def usable(run: Run) -> bool:
    """Whether the history database can take `run`'s entry: it opens, is convlab's and is not
    newer (a quick look, without the run's figures); else a warning, as `record_run` gives."""
    try:
        with _db.connect():
            return True
    except Exception as exc:
        _failed(run, str(_db.explain(_db.db_path(), exc)), 3)
        return False


def _remove(paths: list[str]) -> None:
    """Delete the kept copies of pruned entries (only files in `runs/`)."""
    folder = os.path.realpath(runs_folder())
    for path in paths:
        if os.path.dirname(os.path.realpath(path)) == folder:
            Path(path).unlink(missing_ok=True)


def prune(keep: int) -> int:
    """Delete every entry of the history but the newest `keep`, and the copies in `runs/` of
    the entries deleted (a run's own store is never touched); how many were deleted."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ValueError(f"keep={keep!r}: use a whole number of runs, 0 or more")
    with _db.connect(create=False) as conn:
        if conn is None:
            return 0
        before = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        _remove(_db.prune(conn, keep))
        return int(before - conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def record_later(
    run: Run,
    *,
    experiment: str | None = None,
    variant: str | None = None,
    keep: int | None = None,
) -> None:
    """Record `run` as `record_run` does, off the caller's path: a quick look that the
    database can take it (a problem is the same warning, at once), then the entry is written
    by the background thread (convlab._history._background), which computes the figures it
    needs from the run's own results."""
    if not isinstance(run, Run):
        raise TypeError(f"record_later() takes a Run, not {type(run).__name__}")
    if usable(run):
        _background.later(
            lambda: record_run(run, experiment=experiment, variant=variant, keep=keep)
        )


def note_saved(run: Run, path: Path) -> None:
    """Note that a recorded run was saved to `path` (a lossless `.json` or `.jsonl`), so
    `load_run(history_id)` can read it; nothing happens for a run that is not recorded, and
    a history problem never fails the save. Written after the run's own entry (in the
    background, in order)."""
    if not run.id:
        return
    saved = os.path.abspath(path)

    def note() -> None:
        try:
            _db.update_saved(run.id, saved)
        except Exception:  # the save is written: the history is a convenience here
            return

    _background.later(note)


@dataclass(frozen=True)
class Entry:
    """Where a recorded run's results are, to be read back."""

    id: int
    run_id: str
    results_path: str | None
    """Its store (`kind` "store") or the copy kept of it (`kind` "copy")."""
    kind: str | None
    saved_path: str | None
    """Where it was last saved as `.json` or `.jsonl`."""
    finished_at: str | None

    @property
    def paths(self) -> list[str]:
        """The files that hold it and still exist, its store or copy first."""
        given = [p for p in (self.results_path, self.saved_path) if p]
        return [p for p in given if os.path.isfile(p)]


def locate(history_id: int) -> Entry:
    """The files that hold run `history_id`.

    Raises:
        HistoryError: When there is no such entry, or none of its files is left.
    """
    _background.wait()
    names, rows = _db.select("id = ?", (int(history_id),))
    if not rows:
        raise HistoryError(
            f"no run with history id {history_id} in {_db.db_path()}: cl.history() "
            "(or `convlab history`) lists the recorded runs"
        )
    row = dict(zip(names, rows[0], strict=True))
    entry = Entry(
        int(row["id"]),
        row["run_id"],
        row["results_path"],
        row["results_kind"],
        row["saved_path"],
        row["finished_at"],
    )
    if not entry.paths:
        given = [p for p in (entry.results_path, entry.saved_path) if p]
        raise HistoryError(
            f"run {history_id} ({entry.run_id}) was kept in {' and '.join(given) or 'no file'}, "
            "which no longer exists"
        )
    return entry
