"""The JSONL results store: every finished instance is appended and flushed at once.

Line 1 is a header `{"type": "header", "run": {...}}` (the Run without results, with the
suite's fingerprint); every other line is `{"type": "result", ...CaseResult}`. A crash can
only lose the line being written: readers skip a torn last line. `resume=True` skips the
instances already stored (cancelled ones run again).

One writer at a time: a store is locked (an OS lock on `.<name>.lock` beside it, holding the
owner's PID) while a run writes it, and a second writer gets `StoreError` at once. Readers
never lock. A store whose header line is torn is refused rather than resumed unchecked.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import IO, Any

from convlab.errors import ConvlabError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no OS lock, one writer is up to the user
    fcntl = None  # type: ignore[assignment]
from convlab.model._compact import compact
from convlab.model.conversation import REPLY_ONCE
from convlab.model.results import CaseResult, Run

__all__ = ["ResultStore", "StoreError", "read_store"]


_RESULT = '{"type":"result",'
"""How every result line starts (written by `ResultStore.append`)."""


class StoreError(ConvlabError):
    """The results store cannot be used (another suite's store, unreadable file)."""


def read_store(
    path: str | Path, problems: list[str] | None = None
) -> tuple[dict[str, Any] | None, list[CaseResult]]:
    """The header's run dict and every complete result line (a torn last line is skipped).

    Other lines that cannot be read are skipped too, each described in `problems` if given.
    """
    header: dict[str, Any] | None = None
    results: list[CaseResult] = []
    paused = gc.isenabled()
    gc.disable()  # building many small objects: the collector would rescan them all
    try:
        with open(path, encoding="utf-8") as fh:
            for n, raw in enumerate(fh, 1):
                if not raw.endswith("\n"):
                    break  # a torn last line from a crash
                try:
                    if raw.startswith(_RESULT):
                        result = CaseResult.model_validate_json("{" + raw[len(_RESULT) :])
                        compact(result)
                        results.append(result)
                        continue
                    rec = json.loads(raw)
                except ValueError as exc:  # pydantic's ValidationError, JSONDecodeError
                    if problems is not None:
                        problems.append(f"line {n}: {' '.join(str(exc).split())[:300]}")
                    continue
                if isinstance(rec, dict) and rec.get("type") == "header":
                    header = rec.get("run")
    finally:
        if paused:
            gc.enable()
    return header, results


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

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing drops the lock
            self._fh = None


class ResultStore:
    """Appends results to a JSONL file, one flushed line per finished instance."""

    def __init__(self, path: str | Path, run: Run, resume: bool) -> None:
        self.path = Path(path)
        self.done: dict[tuple[str, str, int, int], CaseResult] = {}
        self.skipped: list[str] = []
        """Stored lines that could not be read on resume (their instances run again)."""
        self._fh: IO[str] | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _StoreLock(self.path)
        try:
            self._open(run, resume)
        except BaseException:
            self._lock.release()
            raise

    def _open(self, run: Run, resume: bool) -> None:
        if resume and self.path.exists() and self.path.stat().st_size:
            self._load_existing(run)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._repair_tail()
        else:
            self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - kept open
            header = run.model_dump(mode="json", exclude={"results"})
            self._write({"type": "header", "run": header})

    def _load_existing(self, run: Run) -> None:
        header, results = read_store(self.path, self.skipped)
        if header is None:
            raise StoreError(
                f"{self.path} has no complete header line (torn or not a convlab store), so "
                "its suite cannot be checked; use another store path or resume=False"
            )
        stored = (header or {}).get("fingerprint")
        if stored and stored != run.fingerprint:
            raise StoreError(
                f"{self.path} holds results of a different suite (fingerprint {stored}, "
                f"this suite {run.fingerprint}); use another store path or resume=False"
            )
        for res in results:
            if res.status != "cancelled":
                self.done[res.key] = res

    def _repair_tail(self) -> None:
        """End a torn last line so the next record starts on its own line."""
        with open(self.path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return
            fh.seek(-1, os.SEEK_END)
            last = fh.read(1)
        if last != b"\n":
            self._write_raw("\n")

    def _write_raw(self, text: str) -> None:
        assert self._fh is not None
        self._fh.write(text)
        self._fh.flush()

    def _write(self, record: dict[str, Any]) -> None:
        self._write_raw(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")

    def append(self, result: CaseResult) -> None:
        """Write one finished instance and flush it to the OS."""
        # defaults come back on read, and so does a long reply's text written once
        line = result.model_dump_json(exclude_defaults=True, context=REPLY_ONCE)
        self._write_raw('{"type":"result",' + line[1:] + "\n")

    def close(self) -> None:
        """Flush to disk and close; the lock is released even when the disk refuses."""
        fh, self._fh = self._fh, None
        try:
            if fh is not None:
                try:
                    fh.flush()
                    os.fsync(fh.fileno())
                finally:
                    fh.close()
        finally:
            self._lock.release()
