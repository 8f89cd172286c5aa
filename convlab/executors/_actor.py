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

from convlab.agents._aimd import SHARED
from convlab.engine.conversation import Env
from convlab.engine.shard import LOG, ShardRunner, ShippedCassette, Wire
from convlab.executors._limits import share_limits, sharing, unshare_limits

__all__ = ["ShardActor"]


class ShardActor:
    """Runs shards of runs' plans in this worker process; kept warm between runs.

    Each run sets itself up (`setup`), streams its shards and ends (`finish`); several runs
    may share a worker, each with its own ShardRunner (and its own `parallel`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.runs: dict[str, ShardRunner] = {}
        self._sends: dict[str, Any] = {}
        _capture(self._send_to_latest)

    def _send_to_latest(self, item: Wire) -> None:
        """A print or log line goes to the run set up last (a worker runs one run at a time
        unless runs overlap)."""
        if self._sends:
            next(reversed(self._sends.values()))(item)

    async def setup(
        self,
        data: bytes,
        run_id: str,
        parallel: int,
        listening: bool,
        window: float,
        limits: Any = None,
    ) -> dict[str, Any]:
        """Unpack a run (`limits`: the actor holding its shared adaptive limits, if any);
        what this worker is (its convlab version, process and host)."""
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
        if limits is not None:  # one adaptive limit per endpoint for the whole run
            share_limits(limits, run_id)
        env = Env(**env_parts)
        shards = ShardRunner(
            env, settings, run_id=run_id, parallel=parallel, listening=listening, window=window
        )
        if rest["cache"] is not None:
            mode, folder = rest["cache"]
            env.cassette = ShippedCassette(mode, Path(folder), shards.send)
        self.runs[run_id] = shards
        self._sends[run_id] = shards.send
        return {
            "version": driver_version(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }

    async def stream(self, run_id: str, places: list[int]) -> AsyncIterator[list[Wire]]:
        """Run the instances at `places` of run `run_id` (see ShardRunner.stream); their
        HTTP requests take their slots from the run's shared limits, if it has some."""
        SHARED.set(sharing(run_id))  # before the shard's tasks start: they copy it
        async for batch in self.runs[run_id].stream(places):
            yield batch

    async def stop(self, run_id: str) -> None:
        """Stop every shard of the run now (running instances are cancelled and sent back)."""
        shards = self.runs.get(run_id)
        if shards is not None:
            shards.stop()

    async def drain(self, run_id: str) -> None:
        """Start no new instance of the run."""
        shards = self.runs.get(run_id)
        if shards is not None:
            shards.drain()

    async def finish(self, run_id: str) -> None:
        """The run is over: forget it (its agent's connections are closed)."""
        self._sends.pop(run_id, None)
        shards = self.runs.pop(run_id, None)
        if shards is not None:
            with contextlib.suppress(Exception):
                await shards.runner.env.aclose()
        unshare_limits(run_id)

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
