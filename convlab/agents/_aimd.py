"""Adaptive concurrency: an AIMD limit on the requests one endpoint has in flight.

Why: real providers answer 429 (or 503) long before the run's `parallel` is reached. Retrying
each rejected request at the same concurrency keeps the endpoint overloaded, so most requests
are rejected at least once. As TCP does with congestion, the limit is cut multiplicatively on
an overload answer (halved) and grown back additively on success (one more request in flight
per window of successful ones), so the run settles just under what the endpoint accepts.

- The limit starts open: only the engine's `parallel` bounds the requests in flight.
- An overload answer cuts the limit to half of the live requests in flight (see below).
  Answers to requests sent before the last cut are the same overload, seen late, and do not
  cut it again (one cut per window), else a burst of rejections would collapse the limit to 1.
- A request in flight far longer than the endpoint answers lately (`STALE_FACTOR` times the
  slowest of its last answers, `STALE_MIN_S` at least) is stuck, not served: it stops holding
  a slot, and no cut counts it. Else a few requests that hang until their case's timeout
  would hold the slots of a cut limit, and nothing else could be sent (nor grow it back).
- A success grows the limit by `1/limit` when the limit was what held requests back; once it
  is back at the highest demand seen (in flight plus waiting: the run's `parallel` at most),
  the limit opens again.
- A `Retry-After` pauses every new request to the endpoint until then, not only the retry
  (a retry has waited its own Retry-After already: it is not paused again by others'),
  never longer than `MAX_PAUSE_S`, nor than half the time the most pressed case waiting or
  in flight still has (`hold_to`: its deadline, when the engine sets `CASE_DEADLINE`).
- Waiting requests are served first come, first served: a new request never overtakes one
  that is queued (the engine's workers would otherwise starve the queue). A retry of a
  request that already held a slot is served before any new one: it is older work, and its
  case's clock is already running.
- The retry of a request whose connection dropped without an answer is readmitted at once,
  even over the limit (`readmit`): the endpoint never answered it, so its retry adds no load
  the limit had not admitted, and waiting for a slot that stuck requests hold would make a
  dropped connection time out where it fails at once with no limit.

A limit belongs to one event loop (its waiters are that loop's futures); `HTTPClient` keeps
one per loop and endpoint. A run spread over several processes shares one limit per
endpoint instead (`SHARED`): its workers' requests ask the one limit, held elsewhere, for
their slots, so the endpoint sees the pressure of one run, not of one per worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter, deque
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

__all__ = [
    "DECREASE",
    "MAX_PAUSE_S",
    "SHARED",
    "STALE_FACTOR",
    "STALE_MIN_S",
    "AdaptiveLimit",
    "Ticket",
]

DECREASE = 0.5
"""The factor an overload answer multiplies the in-flight limit by."""

MAX_PAUSE_S = 30.0
"""The longest Retry-After pause honoured for new requests (the retry policy's own cap)."""

STALE_FACTOR = 4.0
"""A request in flight this many times longer than the slowest recent answer is stuck."""

STALE_MIN_S = 1.0
"""No request is stuck before it has been in flight this long (fast endpoints jitter)."""

RECENT = 32
"""How many of the latest answers' durations say how fast the endpoint answers lately."""

SHARED: ContextVar[Callable[[str], Any] | None] = ContextVar("convlab_shared_limits", default=None)
"""Set by a worker of a spread run: the endpoint's shared limit (an object with
`AdaptiveLimit`'s `try_acquire`, `acquire`, `release`, `hold_to` and `release_deadline`),
used instead of one of this process's own."""


class Ticket:
    """One request's slot: when it was sent, in which window, and whether it still holds
    the slot (a stuck request gives it up)."""

    __slots__ = ("epoch", "held", "sent")

    def __init__(self, epoch: int, sent: float) -> None:
        self.epoch = epoch
        self.sent = sent
        self.held = True


class AdaptiveLimit:
    """The AIMD in-flight limit of one endpoint on one event loop (see the module docstring).

    `acquire()` waits for a slot and returns a ticket; `release(ticket, ...)` gives it back
    with what the endpoint answered. `limit` is None while the limit is open.
    """

    def __init__(self, decrease: float = DECREASE) -> None:
        self.decrease = decrease
        self.limit: float | None = None
        self.in_flight = 0
        """Requests holding a slot (sent, unanswered, not stuck)."""
        self.peak = 0
        """The highest demand seen (in flight plus waiting): where the limit opens again."""
        self.overloads = 0
        """429/503 answers seen."""
        self.cuts = 0
        """Times the limit was cut (at most one per window of requests)."""
        self.stuck = 0
        """Requests that gave up their slot: in flight far longer than the endpoint answers."""
        self.waited_s = 0.0
        """Seconds requests spent waiting for a slot, summed."""
        self.paused_s = 0.0
        """The longest Retry-After pause applied to the endpoint."""
        self.pause_cut: tuple[float, float] | None = None
        """The last Retry-After pause cut short for a case's deadline: (asked, applied) s."""
        self.deadlines: Counter[float] = Counter()
        """The deadlines (loop time) of the cases whose requests wait or are in flight: no
        Retry-After pause outlasts half of the shortest time left to them."""
        self._epoch = 0
        self._waiters: deque[asyncio.Future[Ticket]] = deque()
        self._retries: deque[asyncio.Future[Ticket]] = deque()
        self._held: dict[Ticket, None] = {}
        """The tickets holding a slot, oldest first."""
        self._recent: deque[float] = deque(maxlen=RECENT)
        self._resume_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._sweep_timer: asyncio.TimerHandle | None = None

    @property
    def current(self) -> int | None:
        """The whole number of requests allowed in flight, None while the limit is open."""
        return None if self.limit is None else int(self.limit)

    @property
    def stale_after(self) -> float:
        """Seconds after which a request in flight is stuck and no longer holds a slot."""
        slowest = max(self._recent, default=0.0)
        return max(STALE_MIN_S, STALE_FACTOR * slowest)

    def _room(self) -> bool:
        if self.limit is None or self.in_flight < int(self.limit):
            return True
        return self._sweep() and self.in_flight < int(self.limit)

    def _sweep(self) -> bool:
        """Take their slots from the requests stuck in flight; True when one was."""
        if not self._held:
            return False
        now = asyncio.get_running_loop().time()
        horizon = now - self.stale_after
        freed = False
        while self._held:
            oldest = next(iter(self._held))
            if oldest.sent > horizon:
                break
            del self._held[oldest]
            oldest.held = False
            self.in_flight -= 1
            self.stuck += 1
            freed = True
        return freed

    def _take(self) -> Ticket:
        ticket = Ticket(self._epoch, asyncio.get_running_loop().time())
        self.in_flight += 1
        self._held[ticket] = None
        return ticket

    def _queued(self) -> int:
        return len(self._waiters) + len(self._retries)

    def try_acquire(self, retry: bool = False) -> Ticket | None:
        """Take a free slot at once and return its ticket, or None when the request must
        wait (`acquire()`): the common case, an open limit, costs no coroutine. A `retry`
        (of a request that held a slot) waits behind other retries only."""
        demand = self.in_flight + self._queued() + 1
        if demand > self.peak:
            self.peak = demand
        if self._retries or (self._waiters and not retry) or not self._room():
            return None
        if not retry and self._resume_at and asyncio.get_running_loop().time() < self._resume_at:
            return None
        return self._take()

    def readmit(self) -> Ticket:
        """A slot for the retry of a request whose connection dropped: taken at once, over
        the limit if need be (see the module docstring)."""
        demand = self.in_flight + self._queued() + 1
        if demand > self.peak:
            self.peak = demand
        return self._take()

    async def acquire(self, retry: bool = False) -> Ticket:
        """Wait for a slot (first come, first served; retries before new requests) and take
        it; the ticket says which window of requests this one belongs to."""
        loop = asyncio.get_running_loop()
        got = self.try_acquire(retry)
        if got is not None:
            return got
        future: asyncio.Future[Ticket] = loop.create_future()
        (self._retries if retry else self._waiters).append(future)
        started = loop.time()
        self._wake()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # handed a slot as it was cancelled
                self._give_back(future.result())
                self._wake()
            else:
                self._drop(future)
            raise
        finally:
            self.waited_s += loop.time() - started

    def _give_back(self, ticket: Ticket) -> None:
        if ticket.held:
            ticket.held = False
            del self._held[ticket]
            self.in_flight -= 1

    def release(
        self,
        ticket: Ticket,
        overloaded: bool,
        retry_after: float | None = None,
        succeeded: bool = True,
        answered: bool | None = None,
    ) -> None:
        """Give a slot back: `overloaded` when the endpoint answered 429 or 503 (cut the
        limit, honour `retry_after`); `succeeded` grows it; anything else (a timeout, a
        dropped connection, a cancelled request) leaves it as it is. `answered` (default:
        `overloaded or succeeded`) says the endpoint answered at all: how long it took is
        how fast it answers lately."""
        loop = asyncio.get_running_loop()
        saturated = bool(self._queued()) or (
            self.limit is not None and self.in_flight >= int(self.limit)
        )
        self._give_back(ticket)
        if answered is None:
            answered = overloaded or succeeded
        if answered:
            self._recent.append(loop.time() - ticket.sent)
        if overloaded:
            self.overloads += 1
            if retry_after:
                self._pause(loop, retry_after)
            if ticket.epoch == self._epoch:  # a later answer to an earlier window: same overload
                sent = self.in_flight + 1  # the live requests: stuck ones hold no slot
                base = sent if self.limit is None else min(self.limit, sent)
                self.limit = float(max(1, math.floor(base * self.decrease)))
                self._epoch += 1
                self.cuts += 1
        elif succeeded and self.limit is not None and saturated:
            self.limit += 1.0 / self.limit
            if self.limit >= self.peak:
                self.limit = None
        self._wake()

    def _pause(self, loop: asyncio.AbstractEventLoop, retry_after: float) -> None:
        now = loop.time()
        pause = min(retry_after, MAX_PAUSE_S)
        cap = self._pause_cap(now)
        if cap is not None and pause > cap:
            pause = cap
            self.pause_cut = (retry_after, pause)
        self.paused_s = max(self.paused_s, pause)
        self._resume_at = max(self._resume_at, now + pause)

    def _pause_cap(self, now: float) -> float | None:
        """Half the time the most pressed case still has (None: no deadline known)."""
        if not self.deadlines:
            return None
        return max(0.0, (min(self.deadlines) - now) / 2)

    def hold_to(self, deadline: float) -> None:
        """A request of a case due at `deadline` waits or is in flight: a pause running now
        ends in time for it (`release_deadline` when it is done)."""
        self.deadlines[deadline] += 1
        if self._resume_at:
            now = asyncio.get_running_loop().time()
            cap = self._pause_cap(now)
            if cap is not None and self._resume_at > now + cap:
                asked = self._resume_at - now
                self._resume_at = now + cap
                self.pause_cut = (asked, cap)
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None

    def release_deadline(self, deadline: float) -> None:
        """The request of `hold_to(deadline)` is done."""
        left = self.deadlines[deadline] - 1
        if left > 0:
            self.deadlines[deadline] = left
        else:
            del self.deadlines[deadline]

    def _wake(self) -> None:
        """Hand free slots to the waiting requests in order, retries first (after a
        Retry-After pause); while none is free, watch for the oldest request to get stuck."""
        if not self._queued():
            return
        loop = asyncio.get_running_loop()
        pause = self._resume_at - loop.time()
        if pause > 0 and self._timer is None:
            self._timer = loop.call_later(pause, self._resume)
        while self._queued() and self._room():
            queue = self._retries or self._waiters
            if queue is self._waiters and pause > 0:
                break
            future = queue.popleft()
            if future.done():
                continue
            future.set_result(self._take())
        if self._queued() and self._held and self._sweep_timer is None:
            oldest = next(iter(self._held))
            when = oldest.sent + self.stale_after
            self._sweep_timer = loop.call_at(max(when, loop.time()) + 0.001, self._swept)

    def _resume(self) -> None:
        self._timer = None
        self._wake()

    def _swept(self) -> None:
        self._sweep_timer = None
        self._sweep()
        self._wake()

    def _drop(self, future: asyncio.Future[Ticket]) -> None:
        for queue in (self._waiters, self._retries):
            with contextlib.suppress(ValueError):
                queue.remove(future)
