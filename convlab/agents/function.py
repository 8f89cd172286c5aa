"""Plain Python functions as agents: `f(messages)` or `f(messages, ctx)`, sync or async."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

from convlab._util import import_callable
from convlab.agents.protocol import Agent, AgentContext, AgentSession
from convlab.model.conversation import Message, Observation, Reply, ToolCall

__all__ = ["FunctionAgent", "import_callable", "to_observation"]


def _wants_ctx(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2


def to_observation(value: Any) -> Observation:
    """Normalise what an agent returned (str, dict, Reply, Observation) to an Observation."""
    if isinstance(value, Observation):
        return value
    if isinstance(value, Reply):
        reply = value
    elif isinstance(value, str):
        reply = Reply(text=value)
    elif isinstance(value, dict):
        reply = Reply(data=value)
    elif value is None:
        reply = Reply(text="")
    else:
        raise TypeError(
            f"an agent must return str, dict or convlab.Reply, got {type(value).__name__}"
        )
    calls = [c if isinstance(c, ToolCall) else ToolCall.model_validate(c) for c in reply.tool_calls]
    message = Message(role="assistant", content=reply.text or "")
    if calls:
        message.tool_calls = [
            {"type": "function", "id": c.id or f"call_{i}", "function": {"name": c.name}}
            for i, c in enumerate(calls)
        ]
    return Observation(
        text=reply.text,
        data=reply.data,
        tool_calls=calls,
        messages=[message],
        status=reply.status,
        interaction=reply.interaction,
        facts=list(reply.facts),
        usage=reply.usage,
    )


class _FunctionSession(AgentSession):
    def __init__(self, agent: FunctionAgent) -> None:
        self.agent = agent

    async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
        fn = self.agent.fn
        payload = [m.model_dump(exclude_none=True) for m in messages]
        args: tuple[Any, ...] = (payload, ctx) if self.agent.wants_ctx else (payload,)
        start = time.perf_counter()
        if self.agent.is_async:
            value = await fn(*args)
        else:
            value = await asyncio.to_thread(fn, *args)
            if inspect.isawaitable(value):
                value = await value
        obs = to_observation(value)
        obs.latency_ms = (time.perf_counter() - start) * 1000
        return obs


class FunctionAgent(Agent):
    """A Python function answering `messages` (OpenAI-style dicts), optionally with `ctx`.

    Sync functions run in a worker thread so the event loop never blocks.
    """

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or repr(fn)
        self.wants_ctx = _wants_ctx(fn)
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )

    async def open(self, ctx: AgentContext) -> AgentSession:
        """Functions keep no per-conversation state: the session just calls the function."""
        return _FunctionSession(self)

    @classmethod
    def from_spec(cls, spec: str) -> FunctionAgent:
        """A function named `module:function`."""
        return cls(import_callable(spec), name=spec)
