"""Plain Python functions as agents: `f(messages)` or `f(messages, ctx)`, sync or async."""

from __future__ import annotations

import copy
import inspect
import json
import time
from collections.abc import Callable
from typing import Any

from convlab._durations import elapsed_ms
from convlab._threads import DaemonPool
from convlab._user_code import import_callable, is_async_callable, positional_arity
from convlab.agents.cache import active, function_call, is_cached
from convlab.agents.protocol import Agent, AgentContext, AgentSession
from convlab.model.conversation import Message, Reply, ToolCall, message_dict
from convlab.model.records import Observation

__all__ = ["FunctionAgent", "import_callable", "observation", "to_observation"]


def _wants_ctx(fn: Callable[..., Any]) -> bool:
    arity = positional_arity(fn)
    return arity is not None and arity >= 2


def _json_text(value: Any) -> str:
    """A value as a chat-completions message string: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _call_messages(text: str, calls: list[ToolCall]) -> list[Message]:
    """The assistant message with its tool calls, then one `tool` message per call.

    A chat-completions API rejects a history whose tool calls lack `arguments` or their
    results (as Yao's dynamic runner appends them: the assistant reply, then one tool message
    per call), and functions often forward `messages` to one.
    """
    ids = [c.id or f"call_{i}" for i, c in enumerate(calls)]
    requested = [
        {
            "type": "function",
            "id": call_id,
            "function": {"name": c.name, "arguments": _json_text(c.arguments)},
        }
        for call_id, c in zip(ids, calls, strict=True)
    ]
    results = [
        Message(
            role="tool",
            tool_call_id=call_id,
            content=f"error: {c.error}" if c.error else _json_text(c.result),
        )
        for call_id, c in zip(ids, calls, strict=True)
    ]
    return [Message(role="assistant", content=text, tool_calls=requested), *results]


def observation(
    text: str | None, data: Any = None, calls: list[ToolCall] | None = None
) -> Observation:
    """The Observation of a plain reply (text, data, tool calls)."""
    calls = calls or []
    if calls:
        messages = _call_messages(text or "", calls)
    else:
        messages = [Message(role="assistant", content=text or "")]
    return Observation(text=text, data=data, tool_calls=calls, messages=messages)


def to_observation(value: Any) -> Observation:
    """Normalise what an agent returned (str, dict, Reply, Observation) to an Observation."""
    if isinstance(value, Observation):
        return value
    kind = type(value)
    if kind is str:  # the common replies: nothing to validate
        return observation(value)
    if kind is dict:
        return observation(None, value)
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
    if calls:
        messages = _call_messages(reply.text or "", calls)
    else:
        messages = [Message(role="assistant", content=reply.text or "")]
    return Observation(
        text=reply.text,
        data=reply.data,
        tool_calls=calls,
        messages=messages,
        status=reply.status,
        interaction=reply.interaction,
        facts=list(reply.facts),
        usage=reply.usage,
        events=list(reply.events),
    )


class _FunctionSession(AgentSession):
    def __init__(self, agent: FunctionAgent) -> None:
        self.agent = agent

    async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
        payload = [message_dict(m) for m in messages]
        start = time.perf_counter()
        if self.agent.cached and active() is not None:
            obs = await self._through_cache(payload, ctx)
        else:
            obs = await self._call(payload, ctx)
        obs.latency_ms = elapsed_ms(start)
        return obs

    async def _call(self, payload: list[dict[str, Any]], ctx: AgentContext) -> Observation:
        agent = self.agent
        args: tuple[Any, ...] = (payload, ctx) if agent.wants_ctx else (payload,)
        if agent.is_async:
            value = await agent.fn(*args)
        else:
            value = await agent.threads().run(agent.fn, *args)
            if inspect.isawaitable(value):  # a sync function may hand back a coroutine
                value = await value
        return to_observation(value)

    async def _through_cache(self, payload: list[dict[str, Any]], ctx: AgentContext) -> Observation:
        """An `@cached` function's turn: what it was given in, its reply and world out."""
        sent = {
            "messages": payload,
            "case": ctx.case.id if ctx.case is not None else None,
            "turn": ctx.turn,
            "instructions": ctx.instructions,
            "input": ctx.input.model_dump(mode="json") if ctx.input is not None else None,
            "world": ctx.world,
        }

        async def live() -> dict[str, Any]:
            obs = await self._call(payload, ctx)
            reply = obs.to_dict()
            reply.pop("latency_ms", None)
            recorded = {"observation": reply, "world": ctx.world}
            try:  # checked now, so the case says why rather than the cassette's writer
                return dict(json.loads(json.dumps(recorded)))
            except (TypeError, ValueError) as exc:
                name = self.agent.name
                raise TypeError(f"@cached {name}: its reply or world is not JSON: {exc}") from None

        got = await function_call(self.agent.name, sent, live)
        assert got is not None  # a scope is active: checked by send()
        world = copy.deepcopy(got["world"])
        ctx.world.clear()  # the world object is shared with the case: changed in place
        ctx.world.update(world)
        return Observation.from_dict(copy.deepcopy(got["observation"]))


class FunctionAgent(Agent):
    """A Python function answering `messages` (OpenAI-style dicts), optionally with `ctx`.

    Sync functions run on a pool of reused daemon threads (`DaemonPool`: as many as calls
    in flight, so at most the run's `parallel`) so the event loop never blocks, and one that
    hangs past its case's timeout is abandoned there and does not keep the run from ending.
    """

    close_after_run = True

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, *, strict_input: bool = False
    ) -> None:
        self.fn = fn
        self.strict_input = strict_input
        self.name = name or getattr(fn, "__qualname__", None) or repr(fn)
        self.wants_ctx = _wants_ctx(fn)
        self.is_async = is_async_callable(fn)
        self.cached = is_cached(fn)
        """Opted in with `@convlab.cached`: recorded and replayed when a run has a cache."""
        self._threads: DaemonPool | None = None

    def threads(self) -> DaemonPool:
        """The thread pool sync calls run on (made on first use, again after `aclose`)."""
        pool = self._threads
        if pool is None:
            pool = self._threads = DaemonPool()
        return pool

    def __getstate__(self) -> dict[str, Any]:
        """The function, not its threads (a copy elsewhere makes its own pool)."""
        return dict(self.__dict__, _threads=None)

    async def aclose(self) -> None:
        """Let the pool's waiting threads go (a hung call's thread is never waited on); the
        agent stays usable: the next call makes a new pool."""
        pool, self._threads = self._threads, None
        if pool is not None:
            pool.close()

    async def open(self, ctx: AgentContext) -> AgentSession:
        """Functions keep no per-conversation state: the session just calls the function."""
        return _FunctionSession(self)

    def settings(self) -> dict[str, Any]:
        """The spec and where the function is defined (module, qualified name, file)."""
        fn = inspect.unwrap(self.fn)
        return {
            "spec": self.name,
            "function": f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', '?')}",
            "file": getattr(getattr(fn, "__code__", None), "co_filename", None),
        }

    @classmethod
    def from_spec(cls, spec: str) -> FunctionAgent:
        """A function named `module:function`."""
        return cls(import_callable(spec), name=spec)
