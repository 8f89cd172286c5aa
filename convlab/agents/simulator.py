"""User simulators: what plays the user in dynamic and code-test cases.

The engine calls one method, `await sim.simulate(messages, ctx) -> SimulatorTurn`, with the
conversation so far (the agent's view: `user` messages are the simulated user's own) and a
context holding `ctx.persona`, `ctx.goal` and, in `ctx.metadata`, `turn_number`, `max_turns`,
`checkpoints_reached` and `checkpoints_pending` (plus the case's own simulator metadata).

- `LLMSimulator(agent)` asks any agent (an OpenAI model, an HTTP service, a function standing
  in for one) with the prompt of Yao's dynamic mode and reads its JSON reply
  `{"message", "goal_achieved", "reasoning"}` (`input` is accepted for `message`); a reply that
  is not JSON is the message itself (docs/yao.md, "What convlab relies on").
- `as_simulator(obj)` accepts an object with an async `simulate` method (e.g. the scripted
  simulator), an Agent (wrapped in an LLMSimulator), or a plain function
  `sim(messages, ctx) -> str | dict` called directly; a
  `FunctionAgent` (what `module:function` specs become) counts as such a function.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from convlab.agents.function import FunctionAgent
from convlab.agents.protocol import Agent, AgentContext, as_agent
from convlab.errors import AgentResponseError
from convlab.model.conversation import Message

__all__ = [
    "FunctionSimulator",
    "LLMSimulator",
    "Simulator",
    "SimulatorTurn",
    "as_simulator",
    "parse_reply",
    "simulator_prompt",
]

SYSTEM_PROMPT = """\
You are simulating a user talking to an AI assistant, to test that assistant.
Stay in character as the user described below; never act as the assistant.

Persona: {persona}
Goal: {goal}

Generate the next user message to continue toward the goal: one short, natural message of \
the kind this person would type. Answer the assistant's questions with details that fit the \
persona and the goal. If the goal has been achieved, set goal_achieved to true.

Respond in JSON format only:
{{
  "message": "your next message as the user",
  "goal_achieved": true/false,
  "reasoning": "brief explanation"
}}"""

_STATE_KEYS = ("turn_number", "turn", "max_turns", "checkpoints_reached", "checkpoints_pending")
_CONTRACT_KEYS = frozenset({"message", "input", "goal_achieved", "reasoning"})
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class SimulatorTurn:
    """What the simulated user does next."""

    message: str
    goal_achieved: bool = False
    reasoning: str | None = None


@runtime_checkable
class Simulator(Protocol):
    """The interface the engine calls for dynamic and code-test cases."""

    async def simulate(self, messages: list[Message], ctx: AgentContext) -> SimulatorTurn:
        """The simulated user's next message, given the conversation so far."""
        ...


def _as_dicts(messages: list[Any]) -> list[dict[str, Any]]:
    return [
        m.model_dump(exclude_none=True) if isinstance(m, Message) else dict(m) for m in messages
    ]


def _transcript(messages: list[dict[str, Any]]) -> str:
    lines = []
    for m in messages:
        role = str(m.get("role", "user"))
        text = Message.model_validate(m).text()
        if role == "tool":
            continue
        calls = [c.get("function", {}).get("name", "?") for c in m.get("tool_calls") or []]
        if calls:
            text = (text + " " if text else "") + f"[used tools: {', '.join(calls)}]"
        speaker = {"user": "User", "assistant": "Assistant", "system": "System"}.get(role, role)
        lines.append(f"{speaker}: {text}")
    return "\n".join(lines)


def simulator_prompt(messages: list[Any], ctx: AgentContext) -> list[dict[str, Any]]:
    """Yao's simulator prompt (agent/test/DESIGN_V2.md): a system message and the current
    state as a user message."""
    meta = ctx.metadata or {}
    system = SYSTEM_PROMPT.format(
        persona=ctx.persona or "an ordinary user", goal=ctx.goal or "get help from the assistant"
    )
    turn = meta.get("turn_number", meta.get("turn", ctx.turn + 1))
    lines = [f"Turn {turn}" + (f" of {meta['max_turns']}" if "max_turns" in meta else "") + "."]
    if "checkpoints_reached" in meta or "checkpoints_pending" in meta:
        done = ", ".join(map(str, meta.get("checkpoints_reached") or [])) or "none"
        todo = ", ".join(map(str, meta.get("checkpoints_pending") or [])) or "none"
        lines.append(f"Checkpoints reached: {done}. Checkpoints pending: {todo}.")
    extra = {k: v for k, v in meta.items() if k not in _STATE_KEYS}
    if extra:
        lines.append("Context: " + json.dumps(extra, default=str, ensure_ascii=False))
    convo = _transcript(_as_dicts(messages))
    lines.append("")
    lines.append("Current conversation:")
    lines.append(convo or "(no messages yet: write the user's first message)")
    lines.append("")
    lines.append("Reply with the JSON object only.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def _extract_json(text: str) -> Any:
    """The JSON value in `text`: the whole text, a fenced block, or the outermost `{...}`."""
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return bool(value)


def parse_reply(value: Any) -> SimulatorTurn:
    """Read a simulator's answer: a SimulatorTurn, a dict, JSON text, or plain text.

    Raises:
        AgentResponseError: `simulator returned empty message` when there is no message and
            the goal is not achieved.
    """
    if isinstance(value, SimulatorTurn):
        turn = value
    else:
        obj = value if isinstance(value, dict) else _extract_json(str(value or ""))
        if isinstance(obj, dict) and (value is obj or _CONTRACT_KEYS & obj.keys()):
            message = obj.get("message")
            message = obj.get("input") if message in (None, "") else message
            reasoning = obj.get("reasoning")
            turn = SimulatorTurn(
                message="" if message is None else str(message),
                goal_achieved=_truthy(obj.get("goal_achieved", False)),
                reasoning=None if reasoning is None else str(reasoning),
            )
        else:
            turn = SimulatorTurn(message=str(value or "").strip())
    if not turn.message.strip() and not turn.goal_achieved:
        raise AgentResponseError("simulator returned empty message")
    return turn


class LLMSimulator:
    """A user simulator played by any agent, prompted as Yao's dynamic mode prompts it."""

    def __init__(self, agent: Any) -> None:
        self.agent: Agent = as_agent(agent)
        self.name = f"simulator({self.agent.describe()})"

    async def simulate(self, messages: list[Message], ctx: AgentContext) -> SimulatorTurn:
        """Ask the agent for the user's next message and parse its reply."""
        prompt = [Message.model_validate(m) for m in simulator_prompt(messages, ctx)]
        sim_ctx = AgentContext(
            case=ctx.case,
            turn=ctx.turn,
            instance=f"{ctx.instance}/simulator",
            persona=ctx.persona,
            goal=ctx.goal,
            metadata=dict(ctx.metadata or {}),
        )
        # imported here so that module-level imports keep pointing from the engine to agents
        from convlab.agents.calls import Attempts, RetryPolicy, call_agent

        session = await self.agent.open(sim_ctx)
        try:  # a 429/5xx from the model playing the user is retried like the agent's own
            obs = await call_agent(session, prompt, sim_ctx, RetryPolicy(), Attempts(), "simulator")
        finally:
            await session.close()
        if obs.text is None and isinstance(obs.data, dict):
            return parse_reply(obs.data)
        return parse_reply(obs.text or "")

    def describe(self) -> str:
        """The simulator and the agent that plays it."""
        return self.name

    async def aclose(self) -> None:
        """Release the agent's resources."""
        await self.agent.aclose()

    def __repr__(self) -> str:
        return f"<LLMSimulator {self.agent.describe()}>"


class FunctionSimulator:
    """A plain function `sim(messages)` or `sim(messages, ctx)` (sync or async) as a simulator."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or repr(fn)
        self._helper = helper = FunctionAgent(fn)
        self.wants_ctx, self.is_async = helper.wants_ctx, helper.is_async

    async def simulate(self, messages: list[Message], ctx: AgentContext) -> SimulatorTurn:
        """Call the function with the conversation (OpenAI-style dicts) and parse its answer.

        A sync function runs on the reused daemon threads a sync function agent runs on."""
        payload = _as_dicts(messages)
        args: tuple[Any, ...] = (payload, ctx) if self.wants_ctx else (payload,)
        if self.is_async:
            value = await self.fn(*args)
        else:
            value = await self._helper.threads().run(self.fn, *args)
            if inspect.isawaitable(value):
                value = await value
        return parse_reply(value)

    def describe(self) -> str:
        """The function's name."""
        return self.name

    async def aclose(self) -> None:
        """Let the threads of a sync function go (a hung call's is never waited on)."""
        await self._helper.aclose()

    def __repr__(self) -> str:
        return f"<FunctionSimulator {self.name}>"


def as_simulator(obj: Any) -> Simulator:
    """A simulator from an object with `simulate`, an Agent, a spec string or a function.

    Raises:
        TypeError: For anything else.
    """
    if callable(getattr(obj, "simulate", None)) and not isinstance(obj, type):
        return obj  # type: ignore[no-any-return]
    if isinstance(obj, FunctionAgent):
        return FunctionSimulator(obj.fn, name=obj.name)
    if isinstance(obj, Agent):
        return LLMSimulator(obj)
    if isinstance(obj, str):
        return as_simulator(as_agent(obj))
    if callable(obj):
        return FunctionSimulator(obj)
    raise TypeError(
        f"not a user simulator: {obj!r} (give a function sim(messages, ctx), an agent, "
        "a spec string or an object with an async simulate(messages, ctx))"
    )
