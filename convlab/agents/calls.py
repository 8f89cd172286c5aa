"""Calling the agent: retries of transient failures with backoff, jitter and Retry-After."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

from convlab._durations import elapsed_ms
from convlab.agents.cache import active, calling
from convlab.agents.meter import METER
from convlab.agents.protocol import AgentContext, AgentSession
from convlab.errors import AgentError
from convlab.model.codec import valid_unicode
from convlab.model.conversation import Message
from convlab.model.records import Observation

__all__ = ["Attempts", "RetryPolicy", "call_agent", "is_retryable"]


@dataclass(frozen=True)
class RetryPolicy:
    """How transient agent failures are retried."""

    retries: int = 3
    base_s: float = 0.5
    max_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if retry_after is not None:
            return float(min(max(retry_after, 0.0), self.max_s))
        backoff: float = self.base_s * 2.0 ** (attempt - 1)
        return min(backoff * (0.5 + random.random()), self.max_s)


@dataclass
class Attempts:
    """Counts agent calls of one instance, retries included."""

    calls: int = 0
    retries: int = 0


def is_retryable(exc: BaseException) -> bool:
    """Transient failures: HTTP 429/5xx, connect/read errors, agent timeouts."""
    return isinstance(exc, AgentError) and bool(getattr(exc, "retryable", False))


async def call_agent(
    session: AgentSession,
    messages: list[Message],
    ctx: AgentContext,
    policy: RetryPolicy,
    attempts: Attempts,
    role: str = "agent",
) -> Observation:
    """Send one user turn; retry transient failures; other exceptions propagate.

    `role` (agent, simulator or judge) names the call when a replay finds no recording.
    """
    turn = None if role == "judge" else ctx.turn  # a judge is asked about the last turn
    named = active() is not None  # only a cassette reads the call's name: else it costs nothing
    for attempt in range(policy.retries + 1):
        attempts.calls += 1
        start = time.perf_counter()
        try:
            if named:
                with calling(role, turn):
                    obs = await session.send(messages, ctx)
            else:
                obs = await session.send(messages, ctx)
        except Exception as exc:
            if attempt >= policy.retries or not is_retryable(exc):
                raise
            attempts.retries += 1
            await asyncio.sleep(policy.delay(attempt + 1, getattr(exc, "retry_after", None)))
            continue
        if obs.latency_ms is None:
            obs.latency_ms = elapsed_ms(start)
        _drop_impossible_usage(obs)
        if obs.usage is not None and (meter := METER.get()) is not None:
            await meter.count(role, obs.usage)
        return _as_unicode(obs)
    raise AssertionError("unreachable")


MAX_CALL_TOKENS = 10**9
"""The most tokens one call may report (no model reads or writes a billion tokens in a call):
a larger count, or a negative one, is an endpoint's mistake, never counted or priced."""


def _drop_impossible_usage(obs: Observation) -> None:
    """Usage the endpoint cannot have meant (a negative count, or more than MAX_CALL_TOKENS) is
    left out of the tokens and the cost, and the reply's `error` says so: the reply itself is
    fine, so the case is not an agent error, and no cost is negative or absurd."""
    usage = obs.usage
    if usage is None:
        return
    counts = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    wrong = {k: v for k, v in counts.items() if not 0 <= v <= MAX_CALL_TOKENS}
    if not wrong:
        return
    obs.usage = None
    said = ", ".join(f"{k}={v}" for k, v in wrong.items())
    note = (
        f"the endpoint reported impossible token usage ({said}; a count is 0 to "
        f"{MAX_CALL_TOKENS:,}): this call's tokens and cost are not counted"
    )
    obs.error = f"{obs.error}; {note}" if obs.error else note


def _as_unicode(obs: Observation) -> Observation:
    """The reply with text that is not Unicode (lone surrogates) replaced by U+FFFD, which
    its `error` then says: nothing downstream (checks, views, the store) meets such text."""
    obs, replaced = valid_unicode(obs)
    if replaced:
        note = "the reply held lone surrogates, which are not Unicode text: each became U+FFFD"
        obs.error = f"{obs.error}; {note}" if obs.error else note
    return obs
