"""What one case instance's model calls used, by role (agent, simulator, judge) and model:
every call that reports usage adds to the instance's meter (`call_agent`), which prices it
as it goes; the instance's result keeps the totals (`CaseResult.spend`)."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Literal, cast

from convlab.agents.pricing import Pricer
from convlab.model.conversation import Usage
from convlab.model.records import Spend

__all__ = ["METER", "Meter", "Role"]

Role = Literal["agent", "simulator", "judge"]


class Meter:
    """Sums one instance's usage by (role, model, endpoint), with its cost (None once a call
    had no price: a partial sum would understate it)."""

    __slots__ = ("_pricer", "_spent")

    def __init__(self, pricer: Pricer) -> None:
        self._pricer = pricer
        self._spent: dict[tuple[str, str | None, str | None], Spend] = {}

    def add(self, role: str, usage: Usage) -> None:
        """Count one call's `usage` for `role`, priced."""
        key = (role, usage.model, usage.endpoint)
        cost = self._pricer.cost(
            usage.model, usage.endpoint, usage.prompt_tokens, usage.completion_tokens
        )
        spent = self._spent.get(key)
        if spent is None:
            spent = self._spent[key] = Spend(
                role=cast(Role, role), model=usage.model, endpoint=usage.endpoint, cost_usd=0.0
            )
        spent.calls += 1
        spent.prompt_tokens += usage.prompt_tokens
        spent.completion_tokens += usage.completion_tokens
        spent.total_tokens += usage.total_tokens
        spent.cost_usd = None if cost is None or spent.cost_usd is None else spent.cost_usd + cost

    async def count(self, role: str, usage: Usage) -> None:
        """`add`, with the model's price looked up in a thread the first time the run meets
        it: genai-prices then loads its database (a few hundred milliseconds, the first
        time in a process), which on the event loop would hold up every call in flight."""
        if usage.model is not None and not self._pricer.knows(usage.model, usage.endpoint):
            await asyncio.to_thread(self._pricer.rate, usage.model, usage.endpoint)
        self.add(role, usage)

    def spend(self) -> list[Spend]:
        """The totals, agent first, then simulator, then judge."""
        order = {"agent": 0, "simulator": 1, "judge": 2}
        return sorted(self._spent.values(), key=lambda s: (order[s.role], s.model or ""))


METER: ContextVar[Meter | None] = ContextVar("convlab_meter", default=None)
"""The running instance's meter (set by the engine for each instance)."""
