"""The one agent protocol: open a session for a case instance, send user turns, close.

Every kind of agent (functions, OpenAI-compatible endpoints, HTTP services, demo agents,
user simulators, judges) is adapted to `Agent`; the engine knows nothing else.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from convlab.errors import UnknownNameError
from convlab.registry import Registry

if TYPE_CHECKING:
    from convlab.model.conversation import Message
    from convlab.model.records import Observation
    from convlab.model.suite import Case, TurnInput

__all__ = [
    "AGENT_SPECS",
    "CASE_DEADLINE",
    "Agent",
    "AgentContext",
    "AgentSession",
    "Concurrency",
    "agent_spec",
    "as_agent",
    "owned_by_run",
]


@dataclass(frozen=True)
class Concurrency:
    """An agent's adaptive in-flight limit, as the engine reports it to the views.

    HTTP agents hold the requests in flight to an endpoint under an AIMD limit that 429 and
    503 answers cut and successes grow back (see `convlab.agents._aimd`).
    """

    endpoint: str
    """The endpoint whose limit is the tightest, as `safe_url` shows it."""
    limit: int | None
    """Requests allowed in flight now; None when the limit is open (only `parallel` bounds)."""
    overloads: int = 0
    """429/503 answers seen so far."""
    pause_cut: tuple[float, float] | None = None
    """The last Retry-After pause cut short to leave the cases in flight time to finish:
    (seconds asked, seconds applied); None when every pause was honoured."""
    stuck: int = 0
    """Requests that stopped holding a slot: in flight far longer than the endpoint answers."""
    waited_s: float = 0.0
    """Seconds requests spent waiting for a slot of the limit, summed (not agent latency)."""

    def summary(self) -> dict[str, object]:
        """What a run's settings can show of it (a JSON-able dict)."""
        out: dict[str, object] = {
            "endpoint": self.endpoint,
            "limit": self.limit,
            "overloads": self.overloads,
            "stuck": self.stuck,
            "waited_s": round(self.waited_s, 3),
        }
        if self.pause_cut is not None:
            asked, applied = self.pause_cut
            out["retry_after_cut"] = {"asked_s": asked, "applied_s": round(applied, 3)}
        return out


CASE_DEADLINE: ContextVar[float | None] = ContextVar("convlab_case_deadline", default=None)
"""The running case's deadline, in the event loop's time (`loop.time()`), when the engine
sets it. An HTTP agent's adaptive limit never pauses new requests (a `Retry-After`) past half
of the shortest time the cases it holds still have: an absurd `Retry-After` must not time
out every healthy case."""


@dataclass
class AgentContext:
    """What an agent may know about the case instance it is answering (`ctx`)."""

    case: Case | None = None
    world: dict[str, Any] = field(default_factory=dict)
    """The instance's own mutable world state; as the agent leaves it = `effects`."""
    turn: int = 0
    """0-based user-turn index."""
    instructions: str | None = None
    instance: str = ""
    """The instance key as text, unique within a run (a thread/chat id)."""
    input: TurnInput | None = None
    """The scripted input of this turn (selection, files), when there is one."""
    max_agent_passes: int | None = None
    persona: str | None = None
    """Simulators only: who the simulated user is."""
    goal: str | None = None
    """Simulators only: what the simulated user wants."""
    metadata: dict[str, Any] = field(default_factory=dict)


class AgentSession(ABC):
    """One conversation with an agent; `send` is called once per user turn."""

    @abstractmethod
    async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
        """Answer the conversation so far (it ends with the new user message)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the session holds."""


class Agent(ABC):
    """Something that answers conversations."""

    name: str = "agent"
    close_after_run: ClassVar[bool] = False
    """Whether a run (or `ask()`) that was handed this agent calls its `aclose()` at the end.
    convlab's own agents say yes: their `aclose` only releases the running loop's pools and
    leaves them usable. A user's own subclass says no: it is the user's to close."""
    strict_input: bool = False
    """Whether the agent takes a JSON suite's step inputs as intention-kernel's direct agent
    adapter does (agentAdapter.ts `inputSchema`): `{text, selection?}` and nothing else, so
    a turn whose input has another key, no `text`, a text over 10,000 characters or a bad
    selector errs with EVALUATION_AGENT_INPUT_INVALID. False (the default) is the kernel's
    host adapter, an application's own: it receives any input object, its other keys in
    `ctx.input.extra`. The `catalog` demo is strict; `cl.agents.function(fn,
    strict_input=True)` makes a function agent strict."""

    @abstractmethod
    async def open(self, ctx: AgentContext) -> AgentSession:
        """Start a conversation for one case instance."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release shared resources (connection pools) at the end of a run."""

    def describe(self) -> str:
        """A short description for results; never contains secrets."""
        return self.name

    def settings(self) -> dict[str, Any]:
        """What this agent is made of, as JSON-ready builtins kept with its runs (`spec`, and
        for a model: `model`, `system`, `params`, ...), so two runs can say what changed
        between them; never contains secrets."""
        return {"spec": self.describe()}

    def concurrency(self) -> Concurrency | None:
        """The adaptive in-flight limit on the running loop, once an endpoint has answered
        429 or 503; None for agents that have none (functions, demos) or before any."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


def owned_by_run(given: Any) -> bool:
    """Whether a run closes what it builds from `given` (an agent, a simulator, a spec string
    or a function, as passed to run()/ask()).

    What the run builds from a spec string or a function is the run's, so it closes it; an
    object passed in is the caller's, and is closed only when it says that is harmless
    (`Agent.close_after_run`): another run or a later `ask()` may be using it.
    """
    if given is None or isinstance(given, str):
        return True
    if isinstance(given, Agent) or callable(getattr(given, "simulate", None)):
        return bool(getattr(type(given), "close_after_run", False))
    return True  # a plain function: the run wraps it in an agent of its own


AGENT_SPECS: Registry[Callable[[str], Agent]] = Registry("agent spec scheme")
"""Spec-string schemes (`demo`, `openai`, `http`, ...) -> factory(rest of the string)."""


def agent_spec(
    scheme: str, *aliases: str
) -> Callable[[Callable[[str], Agent]], Callable[[str], Agent]]:
    """Register a factory for spec strings `scheme:REST`."""
    return AGENT_SPECS.register(scheme, *aliases)


def as_agent(obj: Any) -> Agent:
    """Turn an agent, a spec string or a plain function into an Agent.

    Spec strings: `demo:NAME`, `openai:MODEL`, `http:URL` (or `http://...`), `module:function`.
    """
    if isinstance(obj, Agent):
        return obj
    if isinstance(obj, str):
        return _from_spec(obj)
    if callable(obj):
        from convlab.agents.function import FunctionAgent

        return FunctionAgent(obj)
    raise TypeError(f"not an agent: {obj!r} (give a function, an Agent or a spec string)")


def _from_spec(spec: str) -> Agent:
    import convlab.agents  # noqa: F401 - registers the built-in schemes

    if spec.startswith(("http://", "https://")):
        return AGENT_SPECS.get("http")(spec)
    scheme, sep, rest = spec.partition(":")
    if sep and scheme in AGENT_SPECS:
        return AGENT_SPECS.get(scheme)(rest)
    if sep and rest:
        from convlab.agents.function import FunctionAgent, import_callable

        return FunctionAgent(import_callable(spec))
    error = AGENT_SPECS.unknown(scheme)
    if not sep and re.match(r"(gpt|chatgpt|o\d)", spec):  # a bare model name: gpt-4o-mini
        error = UnknownNameError(error.kind, spec, [f"openai:{spec}"], error.available)
    raise error
