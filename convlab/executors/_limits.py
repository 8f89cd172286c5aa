"""One adaptive limit per endpoint for a whole spread run, held by one small actor.

Each worker of a Ray run used to keep its own AIMD limit (`convlab.agents._aimd`) per
endpoint: a 429 cut only the limit of the worker that got it, and the others went on at
their share of `parallel`, so a rate-limited endpoint saw more pressure from Ray than from
the local engine. Now the run's limits live in one `LimitsActor` (no CPU reserved), and
each request of each worker asks it for a slot (`RemoteLimit.acquire`, one round trip) and
gives the slot back with what the endpoint answered (`release`, sent without waiting). The
AIMD is the same code as the local engine's, so the endpoint sees the same pressure.

A case's deadline travels as the time it has left (clocks differ between processes), so a
Retry-After pause never outlasts half of what the most pressed case has, as locally.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from convlab.agents._aimd import AdaptiveLimit, Ticket
from convlab.agents.protocol import Concurrency

__all__ = ["LimitsActor", "RemoteLimit", "share_limits", "sharing", "unshare_limits"]


class LimitsActor:
    """The adaptive limits of the runs of one driver, by run and endpoint (a Ray actor)."""

    def __init__(self) -> None:
        self.limits: dict[tuple[str, str], AdaptiveLimit] = {}
        self.tickets: dict[int, tuple[Ticket, float | None]] = {}
        self._ids = itertools.count()

    def _limit(self, run_id: str, endpoint: str) -> AdaptiveLimit:
        found = self.limits.get((run_id, endpoint))
        if found is None:
            found = self.limits[(run_id, endpoint)] = AdaptiveLimit()
        return found

    async def acquire(self, run_id: str, endpoint: str, retry: bool, left: float | None) -> int:
        """Wait for a slot of the endpoint's limit; the ticket's number."""
        limit = self._limit(run_id, endpoint)
        deadline = None if left is None else asyncio.get_running_loop().time() + left
        if deadline is not None:
            limit.hold_to(deadline)
        try:
            ticket = limit.try_acquire(retry) or await limit.acquire(retry)
        except BaseException:
            if deadline is not None:
                limit.release_deadline(deadline)
            raise
        number = next(self._ids)
        self.tickets[number] = (ticket, deadline)
        return number

    async def release(
        self,
        run_id: str,
        endpoint: str,
        number: int,
        overloaded: bool,
        retry_after: float | None,
        succeeded: bool,
        answered: bool | None,
    ) -> None:
        """Give the slot of ticket `number` back, with what the endpoint answered."""
        held = self.tickets.pop(number, None)
        if held is None:
            return
        ticket, deadline = held
        limit = self._limit(run_id, endpoint)
        limit.release(ticket, overloaded, retry_after, succeeded, answered)
        if deadline is not None:
            limit.release_deadline(deadline)

    async def summary(self, run_id: str) -> dict[str, object] | None:
        """The run's tightest limit as `Concurrency.summary()` says it (None: no endpoint
        answered 429/503)."""
        mine = [(ep, lim) for (run, ep), lim in self.limits.items() if run == run_id]
        if not any(lim.overloads for _, lim in mine):
            return None
        endpoint, tightest = min(mine, key=lambda item: item[1].limit or float("inf"))
        return Concurrency(
            endpoint,
            tightest.current,
            sum(lim.overloads for _, lim in mine),
            stuck=sum(lim.stuck for _, lim in mine),
            waited_s=sum(lim.waited_s for _, lim in mine),
        ).summary()

    async def forget(self, run_id: str) -> None:
        """The run is over: drop its limits."""
        for key in [k for k in self.limits if k[0] == run_id]:
            del self.limits[key]


class RemoteLimit:
    """A worker's handle on one endpoint's shared limit, with `AdaptiveLimit`'s methods as
    `HTTPClient` calls them (a slot always takes a round trip: `try_acquire` says wait)."""

    def __init__(self, actor: Any, run_id: str, endpoint: str) -> None:
        self.actor, self.run_id, self.endpoint = actor, run_id, endpoint
        self._deadline: float | None = None

    def try_acquire(self, retry: bool = False) -> None:
        """Never a slot at once: the shared limit is elsewhere (`acquire`)."""
        return None

    async def acquire(self, retry: bool = False) -> _RemoteTicket:
        """Wait for a slot of the shared limit."""
        loop = asyncio.get_running_loop()
        left = None if self._deadline is None else max(0.0, self._deadline - loop.time())
        number = await self.actor.acquire.remote(self.run_id, self.endpoint, retry, left)
        return _RemoteTicket(number)

    def release(
        self,
        ticket: _RemoteTicket,
        overloaded: bool,
        retry_after: float | None = None,
        succeeded: bool = True,
        answered: bool | None = None,
    ) -> None:
        """Give the slot back (sent without waiting)."""
        self.actor.release.remote(
            self.run_id, self.endpoint, ticket.number, overloaded, retry_after, succeeded, answered
        )

    def hold_to(self, deadline: float) -> None:
        """The next request is of a case due at `deadline` (this loop's time): it travels
        with the request as the time left."""
        self._deadline = deadline

    def release_deadline(self, deadline: float) -> None:
        """Nothing to do here: the actor drops the deadline with the slot."""


class _RemoteTicket:
    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number


_PROVIDERS: dict[str, Callable[[str], RemoteLimit]] = {}
"""A worker's shared limits by run id: endpoint -> its RemoteLimit."""


def share_limits(actor: Any, run_id: str) -> None:
    """This worker's requests for run `run_id` ask `actor` for their slots (`sharing`)."""
    made: dict[str, RemoteLimit] = {}

    def provider(endpoint: str) -> RemoteLimit:
        found = made.get(endpoint)
        if found is None:
            found = made[endpoint] = RemoteLimit(actor, run_id, endpoint)
        return found

    _PROVIDERS[run_id] = provider


def unshare_limits(run_id: str) -> None:
    """Run `run_id` is over on this worker."""
    _PROVIDERS.pop(run_id, None)


def sharing(run_id: str) -> Callable[[str], RemoteLimit] | None:
    """What `convlab.agents._aimd.SHARED` holds while this worker runs `run_id`'s instances."""
    return _PROVIDERS.get(run_id)
