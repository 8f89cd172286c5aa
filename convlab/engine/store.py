"""The JSONL results store: every finished instance is appended and flushed at once.

Line 1 is a header `{"type": "header", "run": {...}}` (the Run without results, with the
suite's fingerprint); then one `{"type": "result", ...CaseResult}` line per finished
instance, and, when the run ends, a `{"type": "summary", "run": {...}}` line saying how
(status, finish time, error, suite checks). A crash can only lose the line being written:
readers skip a torn last line. `resume=True` skips the instances already stored (cancelled
ones run again) and appends after them.

One writer at a time: a store is locked (an OS lock on `.<name>.lock` beside it, holding the
owner's PID) while a run writes it, and a second writer gets `StoreError` at once. Readers
never lock. A store whose header line is torn is refused rather than resumed unchecked.

A new store's header is written to a temporary file beside it and renamed into place once
whole: a disk that fills while it is written leaves no torn store and no lock file (an
`OSError` naming the store), and an earlier store being overwritten stays whole until then.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from convlab.errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no OS lock, one writer is up to the user
    fcntl = None  # type: ignore[assignment]
from convlab._files import folder_for
from convlab.engine._gc import paused_gc
from convlab.model._legacy import upgrade
from convlab.model.codec import FORMAT, check_format, convert, decode_as, encode, wrapped
from convlab.model.records import CaseResult
from convlab.model.results import Results
from convlab.model.run import Run
from convlab.plan import write_suite

__all__ = [
    "END_FIELDS",
    "RESULT_PREFIX",
    "ResultStore",
    "StoreError",
    "end_line",
    "read_store",
    "write_header",
    "write_run",
]

Key = tuple[str, str, int, int]

RESULT_PREFIX = wrapped({"type": "result"}, b"{}")[:-1]
"""How every result line starts (`ResultStore.append`); one that is not valid JSON was cut
short by a crash."""


END_FIELDS = ("status", "finished_at", "error", "suite_assertions", "settings")
"""What a store's last line says about how its run ended (`ResultStore.close`)."""


def result_line(raw: bytes, version: int) -> tuple[CaseResult, bytes]:
    """The record a store's result line holds (`{"type": "result", ...}`, written in format
    `version`), checked, and the record's line in this code's format (without the `type`);
    a `ValueError` says what is wrong with it."""
    line = b"{" + raw[len(RESULT_PREFIX) :].rstrip(b"\r\n")
    if version == FORMAT:
        return decode_as(line, CaseResult), line
    result = convert(upgrade(json.loads(line)), CaseResult)  # an earlier format, converted
    return result, encode(result)


def _scan(
    path: str | Path, problems: list[str] | None, keyed: bool = True
) -> tuple[dict[str, Any] | None, list[Key], Results]:
    """The header's run dict (with how the run ended, if the store says), and every complete
    result line, checked: its instance key (`keyed`), and the line kept in `Results`. A
    torn last line is skipped; other lines that cannot be read are skipped too, each
    described in `problems` if given. A store written in a format this code does not read
    is refused."""
    header: dict[str, Any] | None = None
    end: dict[str, Any] = {}
    keys: list[Key] = []
    results = Results()
    version = FORMAT
    with paused_gc(), open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                break  # a torn last line from a crash
            try:
                if raw.startswith(RESULT_PREFIX):
                    result, line = result_line(raw, version)
                    if keyed:  # a resume needs them, a reader does not
                        keys.append(result.key)
                    results.add_read(line, result)
                    continue
                rec = json.loads(raw)
            except (ValueError, LookupError, TypeError) as exc:  # invalid, not a result
                if problems is not None:
                    problems.append(f"line {n}: {' '.join(str(exc).split())[:300]}")
                continue
            if not isinstance(rec, dict):
                continue
            if rec.get("type") == "header" and isinstance(rec.get("run"), dict):
                header = rec["run"]
                version = check_format(header.get("format_version"), str(path))
            elif rec.get("type") == "summary" and isinstance(rec.get("run"), dict):
                end = rec["run"]  # how the run ended (the last one, after a resume)
    if isinstance(header, dict) and end:
        header = {**header, **{k: v for k, v in end.items() if k in END_FIELDS}}
    return header, keys, results


def read_store(
    path: str | Path, problems: list[str] | None = None
) -> tuple[dict[str, Any] | None, Results]:
    """The header's run dict and every complete result line as `Results` (records decoded
    when read). A torn last line is skipped, and so is any other line that cannot be read,
    each described in `problems` if given."""
    header, _, results = _scan(path, problems, keyed=False)
    return header, results


def write_header(run: Run, write: Callable[[bytes], object]) -> str:
    """Write a store's header line for `run` (the Run without results, its suite a case at a
    time) through `write`; its fingerprint (the suite's, hashed as it is written, else the
    run's own) is returned."""
    head = run.to_dict(exclude=("results", "suite", "fingerprint"))
    write(b'{"type":"header","run":' + encode(head)[:-1])
    fingerprint = run.fingerprint
    if run.suite is not None:  # written a case at a time, hashed as it goes
        write(b',"suite":')
        fingerprint = write_suite(run.suite, write)
    write(b',"fingerprint":' + encode(fingerprint) + b"}}\n")
    return fingerprint


def end_line(run: Run) -> bytes:
    """A store's last line: how `run` ended (END_FIELDS), put over the header when read."""
    return b'{"type":"summary","run":' + encode({k: getattr(run, k) for k in END_FIELDS}) + b"}\n"


def write_run(run: Run, write: Callable[[bytes], object]) -> str:
    """Write a whole finished run as a closed store (header, one line per result, its end)
    through `write`, leaving `run` as it is; `load_run` reads it back. Returns the
    fingerprint written."""
    fingerprint = write_header(run, write)
    results = run.results
    lines = results.lines() if isinstance(results, Results) else map(encode, results)
    for line in lines:
        write(wrapped({"type": "result"}, line) + b"\n")
    write(end_line(run))
    return fingerprint


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


class _StoreLock:
    """An exclusive OS lock for one store, held until `release` (or the process ends)."""

    def __init__(self, path: Path) -> None:
        self.path = _lock_path(path)
        self._fh: IO[str] | None = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115
        if fcntl is None:  # pragma: no cover - Windows
            return
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._fh.seek(0)
            owner = self._fh.read(32).strip() or "unknown"
            self._fh.close()
            self._fh = None
            raise StoreError(
                f"{path} is in use by another run (process {owner}, lock {self.path}); "
                "wait for it to finish or use another store path"
            ) from None
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(f"{os.getpid()}\n")
        self._fh.flush()

    def release(self, remove: bool = False) -> None:
        """Drop the lock; `remove`: delete the lock file first (while it is held), when there
        is no store for it to guard."""
        if self._fh is not None:
            if remove:
                self.path.unlink(missing_ok=True)
            self._fh.close()  # closing drops the lock
            self._fh = None


class ResultStore:
    """Appends results to a JSONL file, one flushed line per finished instance."""

    def __init__(self, path: str | Path, run: Run, resume: bool, overwrite: bool = False) -> None:
        """Open the store for `run` (a new one: its header is written and the run's
        `fingerprint` set; `resume`: the lines already there are read back; `overwrite`: an
        earlier store of this suite is replaced; a file there otherwise is refused)."""
        self.path = Path(path)
        self.stored = Results()
        """The lines already in the store when resumed (the run goes on appending to it)."""
        self.done: dict[Key, int] = {}
        """Stored instances (not cancelled ones) by key: their place in `stored`."""
        self.skipped: list[str] = []
        """Stored lines that could not be read on resume (their instances run again)."""
        self._fh: IO[bytes] | None = None
        folder_for(self.path)
        self._lock = _StoreLock(self.path)
        try:
            self._open(run, resume, overwrite)
        except BaseException:
            self._lock.release(remove=not self.path.exists())
            raise

    def _open(self, run: Run, resume: bool, overwrite: bool) -> None:
        found = self.path.exists() and self.path.stat().st_size > 0
        if found and run.suite is not None:  # what an existing store is checked against
            run.fingerprint = write_suite(run.suite, None)
        if found and resume:
            self._load_existing(run)
            self._fh = open(self.path, "ab")  # noqa: SIM115 - kept open
            self._repair_tail()
        else:
            if found:
                self._may_replace(run, overwrite)
            run.fingerprint = self._new(run)
            self._fh = open(self.path, "ab")  # noqa: SIM115 - kept open

    def _new(self, run: Run) -> str:
        """Write the header to a temporary file beside the store, then rename it into place
        (see the module's docstring); its fingerprint is returned. A write the system refuses
        is an OSError naming the store."""
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            with open(tmp, "xb") as fh:
                fingerprint = write_header(run, fh.write)
            os.replace(tmp, self.path)
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise OSError(
                exc.errno, f"the results store's header could not be written: {why}", str(self.path)
            ) from exc
        finally:
            tmp.unlink(missing_ok=True)
        return fingerprint

    def _may_replace(self, run: Run, overwrite: bool) -> None:
        """Refuse to write over the file there unless asked to and it is a store of this
        suite (never a suite file, a report or another suite's results)."""
        if not overwrite:
            raise StoreError(
                f"{self.path} already exists: pass resume=True (CLI: --resume) to go on with "
                "the run it holds, or overwrite=True (--overwrite) to replace it"
            )
        with open(self.path, "rb") as fh:
            first = fh.readline()
        try:
            head = json.loads(first)
        except ValueError:
            head = None
        run_head = head.get("run") if isinstance(head, dict) else None
        if not (isinstance(run_head, dict) and head.get("type") == "header"):
            why = "its first line is not a convlab store's header"
        elif run_head.get("fingerprint") != run.fingerprint:
            why = f"it holds another suite's results (fingerprint {run_head.get('fingerprint')})"
        else:
            return
        raise StoreError(
            f"{self.path} is not a results store of this suite ({why}), so convlab does not "
            "write over it: use another store path"
        )

    def _load_existing(self, run: Run) -> None:
        header, keys, self.stored = _scan(self.path, self.skipped)
        if header is None:
            raise StoreError(
                f"{self.path} has no complete header line (torn or not a convlab store), so "
                "its suite cannot be checked; use another store path or resume=False"
            )
        stored = header.get("fingerprint")
        if not stored:
            raise StoreError(
                f"{self.path} does not say which suite it holds (no fingerprint in its header), "
                "so it cannot be checked to be this suite's; use another store path or "
                "resume=False"
            )
        if stored != run.fingerprint:
            raise StoreError(
                f"{self.path} holds results of a different suite (fingerprint {stored}, "
                f"this suite {run.fingerprint}); use another store path or resume=False"
            )
        for i, (key, status) in enumerate(zip(keys, self.stored.statuses(), strict=True)):
            if status != "cancelled":
                self.done[key] = i

    def _repair_tail(self) -> None:
        """End a torn last line so the next record starts on its own line."""
        with open(self.path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return
            fh.seek(-1, os.SEEK_END)
            last = fh.read(1)
        if last != b"\n":
            self._write_raw(b"\n")

    def _write_raw(self, data: bytes) -> None:
        assert self._fh is not None
        self._fh.write(data)
        self._fh.flush()

    def append(self, line: bytes) -> None:
        """Write one finished instance's encoded record and flush it to the OS."""
        self._write_raw(wrapped({"type": "result"}, line) + b"\n")

    def sync(self) -> None:
        """Flush every line written so far to disk (the results are safe from here on)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self, run: Run | None = None) -> None:
        """Write how `run` ended (if given), flush to disk and close; the lock is released
        even when the disk refuses.

        The end is a `{"type": "summary", "run": {...}}` line: status, finish time, error,
        suite checks and settings, which `load_run` puts over the header's (a store without
        one was not closed: its run is still `running`). Readers before this line existed
        skip `summary` records.
        """
        fh, self._fh = self._fh, None
        try:
            if fh is not None:
                try:
                    if run is not None:
                        fh.write(end_line(run))
                    fh.flush()
                    os.fsync(fh.fileno())
                finally:
                    fh.close()
        finally:
            self._lock.release()
