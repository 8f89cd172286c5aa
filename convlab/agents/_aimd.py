"""Adaptive concurrency: an AIMD limit on the requests one endpoint has in flight.

Why: real providers answer 429 (or 503) long before the run's `parallel` is reached. Retrying
each rejected request at the same concurrency keeps the endpoint overloaded, so most requests
are rejected at least once. As TCP does with congestion, the limit is cut multiplicatively on
an overload answer (halved) and grown back additively on success (one more request in flight
per window of successful ones), so the run settles just under what the endpoint accepts.

- The limit starts open: only the engine's `parallel` bounds the requests in flight.
- An overload answer cuts the limit to half of what was in flight. Answers to requests sent
  before the last cut are the same overload, seen late, and do not cut it again (one cut per
  window), else a burst of rejections would collapse the limit to 1.
- A success grows the limit by `1/limit` when the limit was what held requests back; once it
  is back at the highest demand seen (in flight plus waiting: the run's `parallel` at most),
  the limit opens again.
- A `Retry-After` pauses every new request to the endpoint until then, not only the retry.
- Waiting requests are served first come, first served: a new request never overtakes one
  that is queued (the engine's workers would otherwise starve the queue).

A limit belongs to one event loop (its waiters are that loop's futures); `HTTPClient` keeps
one per loop and endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque

__all__ = ["DECREASE", "MAX_PAUSE_S", "AdaptiveLimit"]

DECREASE = 0.5
"""The factor an overload answer multiplies the in-flight limit by."""

MAX_PAUSE_S = 30.0
"""The longest Retry-After pause honoured for new requests (the retry policy's own cap)."""


class AdaptiveLimit:
    """The AIMD in-flight limit of one endpoint on one event loop (see the module docstring).

    `acquire()` waits for a slot and returns a ticket; `release(ticket, ...)` gives it back
    with what the endpoint answered. `limit` is None while the limit is open.
    """

    def __init__(self, decrease: float = DECREASE) -> None:
        self.decrease = decrease
        self.limit: float | None = None
        self.in_flight = 0
        self.peak = 0
        """The highest demand seen (in flight plus waiting): where the limit opens again."""
        self.overloads = 0
        """429/503 answers seen."""
        self.cuts = 0
        """Times the limit was cut (at most one per window of requests)."""
        self._epoch = 0
        self._waiters: deque[asyncio.Future[int]] = deque()
        self._resume_at = 0.0
        self._timer: asyncio.TimerHandle | None = None

    @property
    def current(self) -> int | None:
        """The whole number of requests allowed in flight, None while the limit is open."""
        return None if self.limit is None else int(self.limit)

    def _room(self) -> bool:
        return self.limit is None or self.in_flight < int(self.limit)

    def try_acquire(self) -> int | None:
        """Take a free slot at once and return its ticket, or None when the request must
        wait (`acquire()`): the common case, an open limit, costs no coroutine."""
        demand = self.in_flight + len(self._waiters) + 1
        if demand > self.peak:
            self.peak = demand
        if self._waiters or not self._room():
            return None
        if self._resume_at and asyncio.get_running_loop().time() < self._resume_at:
            return None
        self.in_flight += 1
        return self._epoch

    async def acquire(self) -> int:
        """Wait for a slot (first come, first served) and take it; the ticket says which
        window of requests this one belongs to."""
        loop = asyncio.get_running_loop()
        self.peak = max(self.peak, self.in_flight + len(self._waiters) + 1)
        if not self._waiters and self._room() and loop.time() >= self._resume_at:
            self.in_flight += 1
            return self._epoch
        future: asyncio.Future[int] = loop.create_future()
        self._waiters.append(future)
        self._wake()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # handed a slot as it was cancelled
                self.in_flight -= 1
                self._wake()
            else:
                self._drop(future)
            raise

    def release(
        self,
        ticket: int,
        overloaded: bool,
        retry_after: float | None = None,
        succeeded: bool = True,
    ) -> None:
        """Give a slot back: `overloaded` when the endpoint answered 429 or 503 (cut the
        limit, honour `retry_after`); `succeeded` grows it; anything else (a timeout, a
        dropped connection, a cancelled request) leaves it as it is."""
        saturated = bool(self._waiters) or (
            self.limit is not None and self.in_flight >= int(self.limit)
        )
        self.in_flight -= 1
        if overloaded:
            self.overloads += 1
            if retry_after:
                loop = asyncio.get_running_loop()
                pause = min(retry_after, MAX_PAUSE_S)
                self._resume_at = max(self._resume_at, loop.time() + pause)
            if ticket == self._epoch:  # a later answer to an earlier window is the same overload
                sent = self.in_flight + 1
                base = sent if self.limit is None else min(self.limit, sent)
                self.limit = float(max(1, math.floor(base * self.decrease)))
                self._epoch += 1
                self.cuts += 1
        elif succeeded and self.limit is not None and saturated:
            self.limit += 1.0 / self.limit
            if self.limit >= self.peak:
                self.limit = None
        self._wake()

    def _wake(self) -> None:
        """Hand free slots to the waiting requests in order (after a Retry-After pause)."""
        if not self._waiters:
            return
        loop = asyncio.get_running_loop()
        pause = self._resume_at - loop.time()
        if pause > 0:
            if self._timer is None:
                self._timer = loop.call_later(pause, self._resume)
            return
        while self._waiters and self._room():
            future = self._waiters.popleft()
            if future.done():
                continue
            self.in_flight += 1
            future.set_result(self._epoch)

    def _resume(self) -> None:
        self._timer = None
        self._wake()

    def _drop(self, future: asyncio.Future[int]) -> None:
        with contextlib.suppress(ValueError):
            self._waiters.remove(future)
