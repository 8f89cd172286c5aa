"""Slots shared by the runs of an experiment: one `parallel` for every variant, handed out
in turn.

Each variant's runner keeps its own plan, store and events; before an instance talks to its
agent it asks its lane for a slot. A freed slot goes to the next lane in rotation that has an
instance waiting, so every variant progresses at the same pace and none waits for another to
finish: with `parallel=4` and four variants, each variant's first instance starts at once.

No slot is given out until every lane has an instance waiting (or has nothing to run):
otherwise the variant whose runner happened to start first would take every slot.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["Lanes"]


class Lanes:
    """`parallel` slots shared round-robin by `count` lanes (one per variant)."""

    def __init__(self, parallel: int, count: int) -> None:
        self.parallel = max(1, parallel)
        self.free = self.parallel
        self._waiting: list[deque[asyncio.Future[None]]] = [deque() for _ in range(count)]
        self._unready = set(range(count))
        """Lanes that have asked for no slot yet and are still going: none is served before
        every lane has asked or left."""
        self._next = 0

    @asynccontextmanager
    async def slot(self, lane: int) -> AsyncIterator[None]:
        """Hold one of the slots while the body runs."""
        await self.acquire(lane)
        try:
            yield
        finally:
            self.release()

    async def acquire(self, lane: int) -> None:
        """Wait for a slot for `lane` (in turn with the other lanes)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[lane].append(waiter)
        self._unready.discard(lane)
        self._dispatch()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted as it was cancelled
                self.release()
            else:
                waiter.cancel()
                self._dispatch()
            raise

    def release(self) -> None:
        """Give a slot back; the next lane in turn with a waiting instance gets it."""
        self.free += 1
        self._dispatch()

    def leave(self, lane: int) -> None:
        """`lane` asks for nothing more (its run ended, or it has nothing to run)."""
        self._unready.discard(lane)
        self._dispatch()

    def _dispatch(self) -> None:
        if self._unready:
            return
        lanes = len(self._waiting)
        while self.free > 0:
            for step in range(lanes):
                lane = (self._next + step) % lanes
                queue = self._waiting[lane]
                while queue and queue[0].done():  # a waiter cancelled meanwhile
                    queue.popleft()
                if queue:
                    break
            else:
                return
            self.free -= 1
            self._next = (lane + 1) % lanes
            queue.popleft().set_result(None)
