"""The driver's side of a spread run: shards out, results back, every key exactly once.

The driver hands the plan out in shards (up to `per_worker` places each, in turn, at most
`outstanding` shards per worker, so a slow worker never holds the others up) and turns what
comes back into the run's events and results (`Receiver`). It counts the keys: a shard
that ends, dies or drops an instance has the missing ones handed to a live worker again, up
to `attempts` times in all; after that the instance is an `error` blamed on the
infrastructure, with the worker's error. A second result of an instance is dropped. A dead
worker is replaced while the run still has work, at most once per worker it started with.

Stopping (the Stop button, an interrupt) asks every worker to stop: running instances are
cancelled where they run (their agent calls with them) and send back what they got to;
after `grace` seconds whatever has not come back is cancelled at the source and kept as
`cancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from convlab.engine.events import WorkersChanged
from convlab.engine.finished import closed
from convlab.engine.runner import Runner
from convlab.engine.shard import BEFORE, WHILE, Receiver, Wire
from convlab.plan import Instance

__all__ = ["OUTSTANDING", "Dispatcher", "Worker"]

OUTSTANDING = 3
"""Shards a worker holds at once: one running, the next ones waiting for its slots, so a
late answer from the driver never leaves it idle."""


class Worker(Protocol):
    """One worker as the dispatcher drives it."""

    name: str

    def stream(self, places: list[int]) -> AsyncIterator[list[Wire]]:
        """Run the instances at `places` there, yielding batches of wire tuples."""

    def stop(self) -> None:
        """Ask the worker to stop every shard now (without waiting)."""

    def drain(self) -> None:
        """Ask the worker to start no new instance (without waiting)."""

    def is_gone(self, exc: BaseException) -> bool:
        """Whether `exc`, raised by a shard, means the worker itself is gone."""


Spawn = Callable[[int], Awaitable[Worker]]
"""Start a worker with the given number (a replacement for a dead one)."""


@dataclass
class Dispatcher:
    """Runs a plan on `workers`, handing finished instances to `runner` (see module doc)."""

    runner: Runner
    todo: Iterator[tuple[int, Instance]]
    workers: list[Worker]
    chunk: int
    where: str = ""
    outstanding: int = OUTSTANDING
    attempts: int = 3
    grace: float = 5.0
    spawn: Spawn | None = None
    receiver: Receiver = field(init=False)
    _shards: dict[asyncio.Future[None], tuple[Worker, list[int]]] = field(default_factory=dict)
    _retry: deque[int] = field(default_factory=deque)
    _tries: dict[int, int] = field(default_factory=dict)
    _errors: dict[int, str] = field(default_factory=dict)
    _spawned: int = 0
    _spawning: asyncio.Future[Worker] | None = None
    _drained: bool = False
    _emptied: set[asyncio.Future[None]] = field(default_factory=set)
    """Shards whose every instance came back (their calls may still be ending)."""
    _emptying: asyncio.Future[None] = field(init=False)
    """Done when a shard empties: the loop then hands out the next one."""
    _exhausted: bool = False

    def __post_init__(self) -> None:
        self.receiver = Receiver(self.runner)
        self._started = len(self.workers)

    async def run(self) -> None:
        """Run every instance of `todo` to its result; on cancellation, stop the workers,
        keep what they send back and raise CancelledError."""
        self._announce()
        try:
            await self._loop()
        except asyncio.CancelledError:
            await self._stop()
            raise
        finally:
            for place, inst in self.receiver.unrun.items():
                self.runner.unfinished(place, inst, BEFORE)
            for place, inst in self.receiver.pending.items():
                self.runner.unfinished(place, inst, WHILE)

    async def _loop(self) -> None:
        while True:
            if not self.runner.picking and not self._drained:
                self._drained = True  # fail_fast: nothing new starts anywhere
                for worker in self.workers:
                    worker.drain()
            self._fill()
            waiting: set[asyncio.Future[Any]] = set(self._shards)
            if self._spawning is not None:
                waiting.add(self._spawning)
            if not waiting:
                if self.workers or not self._has_work():
                    return
                self._give_up("no worker is left to run it")
                return
            self._emptying = asyncio.get_running_loop().create_future()
            done, _ = await asyncio.wait(
                waiting | {self._emptying}, return_when=asyncio.FIRST_COMPLETED
            )
            for fut in done:
                if fut is self._emptying:
                    continue
                if fut is self._spawning:
                    self._spawned_one(fut)  # type: ignore[arg-type]
                else:
                    self._settle(fut)  # type: ignore[arg-type]

    def _has_work(self) -> bool:
        if self._retry:
            return True
        if self._exhausted or not self.runner.picking:
            return False
        nxt = next(self.todo, None)
        if nxt is None:
            self._exhausted = True
            return False
        self._retry.appendleft(nxt[0])
        self.receiver.pending[nxt[0]] = nxt[1]
        return True

    def _fill(self) -> None:
        """Give the live workers shards, one each in turn, until each has `outstanding`."""
        load = {id(w): 0 for w in self.workers}
        for task, (worker, _) in self._shards.items():
            if task not in self._emptied and id(worker) in load:
                load[id(worker)] += 1
        while True:
            short = [w for w in self.workers if load[id(w)] < self.outstanding]
            if not short:
                return
            for worker in short:
                places = self._next_shard()
                if not places:
                    return
                task = asyncio.ensure_future(self._consume(worker, places))
                self._shards[task] = (worker, places)
                load[id(worker)] += 1

    def _next_shard(self) -> list[int]:
        places: list[int] = []
        while self._retry and len(places) < self.chunk:
            places.append(self._retry.popleft())
        if not self.runner.picking:
            return places
        while len(places) < self.chunk and not self._exhausted:
            nxt = next(self.todo, None)
            if nxt is None:
                self._exhausted = True
                break
            self.receiver.pending[nxt[0]] = nxt[1]
            places.append(nxt[0])
        return places

    async def _consume(self, worker: Worker, places: list[int]) -> None:
        stream = worker.stream(places)
        pending = self.receiver.pending
        try:
            async for batch in stream:
                self.receiver.apply(batch, worker.name)
                if not any(p in pending for p in places):  # all back: the next shard can go
                    task = asyncio.current_task()
                    if task is not None and task not in self._emptied:
                        self._emptied.add(task)
                        if not self._emptying.done():
                            self._emptying.set_result(None)
        finally:
            with contextlib.suppress(BaseException):
                await stream.aclose()  # type: ignore[attr-defined]

    def _settle(self, task: asyncio.Future[None]) -> None:
        """A shard ended: its missing instances go again (or fail, out of attempts)."""
        worker, places = self._shards.pop(task)
        self._emptied.discard(task)
        exc = None if task.cancelled() else task.exception()
        if exc is not None and worker.is_gone(exc) and worker in self.workers:
            self.workers.remove(worker)
            self._replace()
            self._announce()
        why = _first_line(exc) if exc is not None else "the worker ended the shard without it"
        for place in places:
            inst = self.receiver.pending.get(place)
            if inst is None:
                continue
            tries = self._tries[place] = self._tries.get(place, 0) + 1
            self._errors[place] = f"worker {worker.name}: {why}"
            if tries < self.attempts:
                self._retry.append(place)
            else:
                self._fail(place, inst)

    def _fail(self, place: int, inst: Instance) -> None:
        self.receiver.pending.pop(place, None)
        tries = self._tries.get(place, 0)
        why = self._errors.get(place, "no worker is left to run it")
        err = (
            f"it did not come back from its workers ({tries} attempt(s)); last: {why}"
            if tries
            else f"it did not run: {why}"
        )
        self.runner.accept(place, inst, closed(inst, "error", err, "infrastructure"))

    def _give_up(self, why: str) -> None:
        """No worker is left: every instance not finished is an error saying why."""
        while self._has_work():
            place = self._retry.popleft()
            self._errors.setdefault(place, why)
            inst = self.receiver.pending.get(place)
            if inst is not None:
                self._fail(place, inst)

    def _replace(self) -> None:
        if self.spawn is None or self._spawning is not None or self._spawned >= self._started:
            return
        self._spawned += 1
        self._spawning = asyncio.ensure_future(self.spawn(self._started + self._spawned))

    def _spawned_one(self, fut: asyncio.Future[Worker]) -> None:
        self._spawning = None
        if fut.cancelled() or fut.exception() is not None:
            return
        self.workers.append(fut.result())
        self._announce()

    def _announce(self) -> None:
        if self.runner.listeners:
            self.runner.emit(WorkersChanged(len(self.workers), self.where))

    async def _stop(self) -> None:
        """Stop every worker, keep what comes back within `grace`, cancel the rest."""
        if self._spawning is not None:
            self._spawning.cancel()
        for worker in self.workers:
            worker.stop()
        shards = set(self._shards)
        if shards:
            with contextlib.suppress(asyncio.CancelledError):  # a second stop: hurry
                await asyncio.wait(shards, timeout=self.grace)
        for task in shards:
            task.cancel()
        if shards:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(shards, timeout=self.grace)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    head = next((line for line in text if line.strip()), "")
    return f"{type(exc).__name__}: {head}"[:300]
