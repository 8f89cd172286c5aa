"""Running a run's plan in shards, in other processes: the seam convlab.executors plug into.

The driver's Runner keeps the plan, the results store and the event stream. An `Executor`
runs the planned instances somewhere else, and gives each finished one back to the driver's
`Runner.accept`, so the driver stays the one writer of results. On a worker, `ShardRunner`
runs shards of the plan (lists of places in it) with the same Runner and Conversation code as
a local run, at most `parallel` instances at a time, and streams back what happened as
batches of plain tuples, the wire:

- (STARTED, place): the instance began talking to the agent;
- (TURN, place, index, turn JSON): one of its turns finished (a `TurnResult`; no JSON when
  the instance finishes in the same batch: the driver takes it from the result);
- (CHECKPOINT, place, id, turn): a dynamic case reached a checkpoint;
- (FINISHED, place, result JSON): it finished: its `CaseResult`, as a store line holds it;
- (UNRUN, place): it was not started, the shard being stopped first;
- (LIMIT, limit, parallel, endpoint, overloads): the agent's adaptive limit moved;
- (LOG, level, text): a line the worker logged or printed;
- (RECORDED, key, document): a call recorded for the run's cache (the driver writes it);
- (CACHE, recorded, replayed, missed, unwritten): what the worker's cache did since.

A batch goes back once something happened and `window` seconds have passed (or the shard
is done), so a shard of a hundred instances costs a few dozen messages, not hundreds.
`Receiver` turns batches back into the engine's events on the driver.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from convlab.agents._secret import known_secrets
from convlab.agents.cache import Cassette
from convlab.engine._gc import quiet_gc
from convlab.engine.conversation import Env
from convlab.engine.events import (
    CaseStarted,
    CheckpointReached,
    ConcurrencyChanged,
    Event,
    TurnCompleted,
    WorkerLog,
)
from convlab.engine.executor import Executor
from convlab.engine.finished import closed, kept
from convlab.engine.runner import Runner, Settings
from convlab.model.codec import decode_as, encode
from convlab.model.records import CaseResult, TurnResult
from convlab.plan import Instance, expand

__all__ = [
    "CACHE",
    "CHECKPOINT",
    "FINISHED",
    "LIMIT",
    "LOG",
    "RECORDED",
    "STARTED",
    "TURN",
    "UNRUN",
    "Executor",
    "Receiver",
    "ShardRunner",
    "ShippedCassette",
]

STARTED, TURN, CHECKPOINT, FINISHED, UNRUN, LIMIT, LOG, RECORDED, CACHE = range(9)
Wire = tuple[Any, ...]
BEFORE, WHILE = "run stopped before it ran", "run stopped while it ran"


class ShippedCassette(Cassette):
    """A worker's record/replay cache: it replays from the run's folder as the driver's does,
    but a new recording goes to the driver (`send`), which writes it."""

    def __init__(self, mode: Any, folder: Path, send: Any) -> None:
        super().__init__(mode, folder)
        self._send = send

    def _write(self, key: str, doc: dict[str, Any]) -> bool:
        self._send((RECORDED, key, doc))
        return True


class _Outbox:
    """What one shard has to send back, and whether all its instances are done."""

    def __init__(self, size: int) -> None:
        self.items: list[Wire] = []
        self.left = size
        self.ready = asyncio.Event()
        self.done = asyncio.Event()

    def put(self, item: Wire) -> None:
        self.items.append(item)
        self.ready.set()

    def finished_one(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.done.set()
            self.ready.set()


class ShardRunner:
    """Runs shards of one run's plan in this process (a worker), `parallel` at a time."""

    def __init__(
        self,
        env: Env,
        settings: Settings,
        *,
        run_id: str,
        parallel: int,
        listening: bool,
        window: float = 0.02,
    ) -> None:
        env.run_id, env.parallel = run_id, parallel
        env.secrets = self._secrets = known_secrets()  # read once, as the local run does
        self.runner = Runner(env, settings)
        if listening:
            self.runner.listeners.append(self._on_event)
        env.emit, env.listening = self.runner.emit, listening
        self.window = window
        self._plan: list[Instance] = []
        self._planned = expand(env.suite, settings.runs, settings.allow_external_writes)
        self._slots = asyncio.Semaphore(max(1, parallel))
        self._owner: dict[tuple[str, str, int, int], tuple[_Outbox, int]] = {}
        self._shared: list[Wire] = []
        self._boxes: list[_Outbox] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._picking = True
        self._cache_sent = (0, 0, 0, 0)
        self._loop: asyncio.AbstractEventLoop | None = None

    def instance(self, place: int) -> Instance:
        """The instance at `place` in the run's plan (the plan is built as far as needed)."""
        while len(self._plan) <= place:
            self._plan.append(next(self._planned))
        return self._plan[place]

    def send(self, item: Wire) -> None:
        """Send `item` (a log line, a recording) with the next batch of any shard; from any
        thread (a sync agent's `print` runs on a worker thread)."""
        self._shared.append(item)
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            here = asyncio.get_running_loop() is loop
        except RuntimeError:
            here = False
        if here:
            self._wake()
        else:
            loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        for box in self._boxes:
            box.ready.set()

    def stop(self) -> None:
        """Stop every shard: running instances are cancelled (each sends what it got to),
        waiting ones are sent back as not started."""
        self._picking = False
        for task in list(self._tasks):
            task.cancel()

    def drain(self) -> None:
        """Start no new instance (`fail_fast`): running ones finish, waiting ones go back."""
        self._picking = False

    async def stream(self, places: list[int]) -> AsyncIterator[list[Wire]]:
        """Run the instances at `places`, yielding batches of wire tuples until all are done.
        Closing the generator (a cancelled call) cancels the instances still running."""
        self._loop = asyncio.get_running_loop()
        box = _Outbox(len(places))
        self._boxes.append(box)
        tasks = [asyncio.ensure_future(self._one(place, box)) for place in places]
        self._tasks.update(tasks)
        try:
            with quiet_gc():  # as in a local run: no collection storms
                while True:
                    await box.ready.wait()
                    if not box.done.is_set():  # let more finish before sending
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(box.done.wait(), self.window)
                    box.ready.clear()
                    batch, box.items = _encoded(box.items), []
                    batch += self._take_shared()
                    if batch:
                        yield batch
                    if box.done.is_set() and not box.items:
                        return
        finally:
            self._boxes.remove(box)
            for task in tasks:
                task.cancel()
            self._tasks.difference_update(tasks)

    def _take_shared(self) -> list[Wire]:
        shared, self._shared = self._shared, []
        cassette = self.runner.env.cassette
        if cassette is not None:
            now = (cassette.recorded, cassette.replayed, cassette.missed, cassette.unwritten)
            if now != self._cache_sent:
                delta = tuple(a - b for a, b in zip(now, self._cache_sent, strict=True))
                shared.append((CACHE, *delta))
                self._cache_sent = now
        return shared

    async def _one(self, place: int, box: _Outbox) -> None:
        inst = self.instance(place)
        self._owner[inst.key] = (box, place)
        try:
            box.put(await self._result(inst, place))
        finally:
            self._owner.pop(inst.key, None)
            box.finished_one()

    async def _result(self, inst: Instance, place: int) -> Wire:
        """The instance's FINISHED tuple (cancelled: what it got to), or UNRUN."""
        started = False
        try:
            async with self._slots:
                if not self._picking:
                    return (UNRUN, place)
                started = True
                result = await self.runner.run_instance(inst)
        except asyncio.CancelledError:
            if not started:
                return (UNRUN, place)
            stopped = self.runner._stopped.pop(inst.key, None)
            result = stopped or closed(inst, "cancelled", WHILE)
        return (FINISHED, place, kept(None, result, self._secrets)[1])

    def _on_event(self, event: Event) -> None:
        """Route an engine event of this worker to the shard of its instance."""
        if isinstance(event, ConcurrencyChanged):
            self.send((LIMIT, event.limit, event.parallel, event.endpoint, event.overloads))
            return
        owner = self._owner.get(getattr(event, "key", None))  # type: ignore[arg-type]
        if owner is None:
            return
        box, place = owner
        if isinstance(event, CaseStarted):
            box.put((STARTED, place))
        elif isinstance(event, TurnCompleted):
            box.put((TURN, place, event.turn))  # encoded when the batch goes
        elif isinstance(event, CheckpointReached):
            box.put((CHECKPOINT, place, event.checkpoint, event.turn))


def _encoded(items: list[Wire]) -> list[Wire]:
    """`items` with each turn encoded, but those of instances that finish in the same batch
    (the driver takes them from the result, which it decodes anyway)."""
    done = {item[1] for item in items if item[0] == FINISHED}
    return [
        (TURN, item[1], item[2].index, None if item[1] in done else encode(item[2]))
        if item[0] == TURN
        else item
        for item in items
    ]


class Receiver:
    """The driver's end of the wire: batches back into the Runner's events and results.

    `pending` holds the instances handed out and not yet finished, by place; an instance that
    finishes leaves it (a second FINISHED of it, from a shard run again, is dropped)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.pending: dict[int, Instance] = {}
        self.unrun: dict[int, Instance] = {}
        """Instances sent back as not started (kept as stopped before they ran)."""

    def apply(self, batch: list[Wire], worker: str) -> None:
        """Emit the events of `batch` and accept the instances it finished."""
        runner = self.runner
        listening = bool(runner.listeners)
        done = {
            item[1]: decode_as(item[2], CaseResult)
            for item in batch
            if item[0] == FINISHED and item[1] in self.pending
        }
        for item in batch:
            tag = item[0]
            if tag == FINISHED:
                inst = self.pending.pop(item[1], None)
                if inst is not None:
                    runner.accept(item[1], inst, done[item[1]])
            elif tag == UNRUN:
                inst = self.pending.pop(item[1], None)
                if inst is not None:
                    self.unrun[item[1]] = inst
            elif tag in (RECORDED, CACHE):
                self._cache(item)
            elif listening:
                event = self._event(item, worker, done)
                if event is not None:
                    runner.emit(event)

    def _event(self, item: Wire, worker: str, done: dict[int, CaseResult]) -> Event | None:
        tag = item[0]
        if tag == LOG:
            return WorkerLog(worker, item[1], item[2])
        if tag == LIMIT:
            return ConcurrencyChanged(item[1], item[2], item[3], item[4])
        inst = self.pending.get(item[1])
        if inst is None:
            return None
        if tag == STARTED:
            return CaseStarted(inst.key, inst.label, inst.case.mode, inst.case.name, worker)
        if tag == TURN:
            return TurnCompleted(inst.key, _turn(item, done.get(item[1])))
        if tag == CHECKPOINT:
            return CheckpointReached(inst.key, item[2], item[3])
        return None

    def _cache(self, item: Wire) -> None:
        cassette = self.runner.env.cassette
        if cassette is None:
            return
        if item[0] == RECORDED:
            if not cassette._write(item[1], item[2]):
                cassette.recorded -= 1  # counted by the worker, but not kept
            return
        cassette.recorded += item[1]
        cassette.replayed += item[2]
        cassette.missed += item[3]
        cassette.unwritten += item[4]


def _turn(item: Wire, result: CaseResult | None) -> TurnResult:
    """A TURN tuple's TurnResult: decoded, or taken from its instance's result."""
    if item[3] is not None:
        return decode_as(item[3], TurnResult)
    assert result is not None, "a turn without its JSON comes with its instance's result"
    return next(t for t in result.turns if t.index == item[2])
