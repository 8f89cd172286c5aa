"""A worker of a spread run: one process, one event loop, the engine's own ShardRunner.

`ShardActor` is a plain class that `convlab.executors._ray` turns into a Ray async actor
(Ray gives it its event loop; convlab sets how many calls it takes at once). `setup` unpacks
the run the driver sent, `stream` runs a shard of the plan and yields its batches. What the
worker logs or prints comes back to the driver as LOG tuples, never as text in a cell.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from convlab.engine.conversation import Env
from convlab.engine.shard import LOG, ShardRunner, ShippedCassette, Wire

__all__ = ["ShardActor"]


class ShardActor:
    """Runs shards of one run's plan in this worker process."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.shards: ShardRunner | None = None

    async def setup(
        self, data: bytes, run_id: str, parallel: int, listening: bool, window: float
    ) -> dict[str, Any]:
        """Unpack the run; what this worker is (its convlab version, process and host)."""
        from convlab.executors._ship import driver_version, unpack
        from convlab.model.assertions import EVALUATORS

        env_parts, settings, rest = unpack(data)
        with contextlib.suppress(OSError):  # the same machine: relative paths mean the same
            os.chdir(rest["cwd"])
        sys.path.extend(p for p in rest["path"] if p not in sys.path)
        known = EVALUATORS.entries()
        for evaluator, fn in rest["evaluators"].items():
            if evaluator not in known:
                EVALUATORS.add(evaluator, fn)
        env = Env(**env_parts)
        shards = ShardRunner(
            env, settings, run_id=run_id, parallel=parallel, listening=listening, window=window
        )
        if rest["cache"] is not None:
            mode, folder = rest["cache"]
            env.cassette = ShippedCassette(mode, Path(folder), shards.send)
        self.shards = shards
        _capture(shards.send)
        return {
            "version": driver_version(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }

    async def stream(self, places: list[int]) -> AsyncIterator[list[Wire]]:
        """Run the instances at `places` (see ShardRunner.stream)."""
        assert self.shards is not None, "setup first"
        async for batch in self.shards.stream(places):
            yield batch

    async def stop(self) -> None:
        """Stop every shard now (running instances are cancelled and sent back)."""
        if self.shards is not None:
            self.shards.stop()

    async def drain(self) -> None:
        """Start no new instance."""
        if self.shards is not None:
            self.shards.drain()

    async def pid(self) -> int:
        """This worker's process id."""
        return os.getpid()


class _Lines(io.TextIOBase):
    """A text stream whose every line becomes a LOG tuple (`print` on a worker)."""

    def __init__(self, send: Any, level: str) -> None:
        self._send, self._level, self._part = send, level, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self._part + text).split("\n")
        self._part = lines.pop()
        for line in lines:
            if line.strip():
                self._send((LOG, self._level, line[:2000]))
        return len(text)


class _Handler(logging.Handler):
    """A logging handler whose every record becomes a LOG tuple."""

    def __init__(self, send: Any) -> None:
        super().__init__()
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._send((LOG, record.levelname, f"{record.name}: {record.getMessage()}"[:2000]))
        except Exception:  # a record that cannot be formatted must not break the worker
            self.handleError(record)


def _capture(send: Any) -> None:
    """Send this process's prints and log records to the driver from now on."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(handler)
    root.addHandler(_Handler(send))
    sys.stdout = _Lines(send, "PRINT")
    sys.stderr = _Lines(send, "STDERR")
