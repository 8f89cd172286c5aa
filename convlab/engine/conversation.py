"""One instance's conversation: the agent session, the message history, the recorded turns.

The conversation modes (engine/modes.py) drive it; it sends user turns through the retry
policy, evaluates checks and emits turn events.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from convlab._durations import elapsed_ms
from convlab.agents.cache import Cassette
from convlab.agents.calls import Attempts, RetryPolicy, call_agent
from convlab.agents.meter import Meter
from convlab.agents.pricing import Pricer
from convlab.agents.protocol import Agent, AgentContext, AgentSession
from convlab.checks import CheckContext, evaluate
from convlab.engine.codes import error_code, turn_code
from convlab.engine.events import ConcurrencyChanged, Event, TurnCompleted
from convlab.engine.masking import masked_turn
from convlab.engine.replies import MAX_REPLY_BYTES, cap_reply, share_reply_text
from convlab.errors import TurnFailed
from convlab.model._ids import case_thread, trace_of, turn_id_of
from convlab.model.blame import blame_of
from convlab.model.conversation import Message, Usage
from convlab.model.records import (
    AssertionResult,
    AssertionStatus,
    CheckpointResult,
    Observation,
    TurnResult,
)
from convlab.model.tracebacks import error_info, error_text, message_of

if TYPE_CHECKING:
    from convlab.model.assertions import Assertion
    from convlab.model.suite import Suite, TurnInput
    from convlab.plan import Instance

__all__ = ["Conversation", "Env", "resolve_simulator", "status_of", "stopping"]


def stopping() -> bool:
    """Whether the running task is really being cancelled (the run's stop, a timeout).

    A CancelledError that user code raises itself, with no cancel request pending, is that
    code's fault, not a stop: it stays inside its case.
    """
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


@dataclass
class Env:
    """What every instance of a run shares."""

    agent: Agent
    suite: Suite
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    simulator: Any = None
    """An object with `async simulate(messages, ctx)`; None means none configured."""
    judge: Agent | None = None
    judges: dict[str, Agent] = field(default_factory=dict)
    """Agents by the id an assertion names (Yao's `agents:validator`)."""
    emit: Callable[[Event], None] = lambda event: None
    listening: bool = False
    secrets: list[str] = field(default_factory=list)
    """The secret values the run masks (`convlab.engine.masking`): what listeners see too."""
    """Whether anyone listens to `emit` (no event is built for no one)."""
    timeout_s: float = 120.0
    simulators: dict[str, Any] = field(default_factory=dict)
    """Simulators built from cases' `use` specs, one per spec, closed at the end."""
    max_reply_bytes: int | None = MAX_REPLY_BYTES
    """A longer reply text is cut to this many UTF-8 bytes and marked (None: no cap)."""
    run_id: str = ""
    """The run's id (thread ids start with it)."""
    cassette: Cassette | None = None
    """Record/replay of the calls that leave the process (run()'s `cache`); None: live."""
    parallel: int = 4
    """The run's `parallel`: the adaptive limit is shown while it is below it."""
    borrowed: tuple[Any, ...] = ()
    """What the caller passed in and still owns: `aclose` leaves these open (`owned_by_run`)."""
    pricer: Pricer = field(default_factory=Pricer)
    """Prices the model calls' usage (genai-prices, and the run's `prices`)."""
    limit_seen: tuple[str, int | None] | None = None
    """The agent's adaptive limit as last reported (`ConcurrencyChanged` says when it moves)."""

    def note_concurrency(self) -> None:
        """Tell the views when the agent's adaptive in-flight limit has moved (it is read
        after every agent call: the agent exposes a typed status, the views see events)."""
        status = self.agent.concurrency()
        if status is None:
            return
        limit = status.limit if status.limit is None or status.limit < self.parallel else None
        seen = (status.endpoint, limit)
        if seen != self.limit_seen:
            self.limit_seen = seen
            self.emit(ConcurrencyChanged(limit, self.parallel, status.endpoint, status.overloads))

    def case_simulator(self, spec: str) -> Any:
        """The simulator a case names (built once per spec for the whole run)."""
        if spec not in self.simulators:
            self.simulators[spec] = resolve_simulator(spec)
        return self.simulators[spec]

    async def aclose(self) -> list[str]:
        """Release the agent's, the judge's and the simulators' resources: the ones this run
        owns (`borrowed` ones are the caller's, who may go on using them).

        One that fails to close does not keep the others open: every one is closed and the
        failures come back as messages (the runner records them on the Run).
        """
        problems: list[str] = []
        objs = (
            self.agent,
            self.judge,
            self.simulator,
            *self.judges.values(),
            *self.simulators.values(),
        )
        kept = {id(o) for o in self.borrowed}
        for obj in {id(o): o for o in objs if o is not None and id(o) not in kept}.values():
            close = getattr(obj, "aclose", None)
            if close is None:
                continue
            try:
                await close()
            except Exception as exc:
                name = getattr(obj, "name", None) or type(obj).__name__
                problems.append(f"closing {name} failed: {error_text(exc)}")
        return problems


def resolve_simulator(simulator: Any) -> Any:
    """A simulator object from None/"scripted" (the deterministic default), a spec string,
    an agent or a function."""
    if simulator is None or simulator == "scripted":
        from convlab.agents.scripted import ScriptedSimulator

        return ScriptedSimulator()
    from convlab.agents.protocol import as_agent
    from convlab.agents.simulator import as_simulator

    obj = as_agent(simulator) if isinstance(simulator, str) else simulator
    return as_simulator(obj)


def status_of(results: Sequence[AssertionResult]) -> AssertionStatus:
    """error if any check errored, failed if any failed, else passed (skips ignored)."""
    statuses = {r.status for r in results}
    if "error" in statuses:
        return "error"
    return "failed" if "failed" in statuses else "passed"


class Conversation:
    """The running state of one case instance."""

    def __init__(self, inst: Instance, env: Env) -> None:
        self.inst, self.env, self.case = inst, env, inst.case
        self.ctx = AgentContext(
            case=inst.case,
            world=copy.deepcopy(inst.case.world) if inst.case.world else {},
            instructions=inst.case.instructions,
            instance=inst.label,
            max_agent_passes=inst.case.limits.max_agent_passes,
        )
        self.messages: list[Message] = []
        self.turns: list[TurnResult] = []
        self.attempts = Attempts()
        self.usage: Usage | None = None
        self.meter = Meter(env.pricer)
        """Tokens and cost of this instance's model calls, by role and model."""
        self.session: AgentSession | None = None
        self.checkpoints: list[CheckpointResult] = []
        """Dynamic cases: checkpoint states (kept when the case times out)."""
        self.hook_error: str | None = None
        """An after hook's failure on a stopped instance (recorded on its result)."""
        self.thread_id = thread_id(env.run_id, inst)

    async def open(self) -> None:
        """Open the agent session for this instance."""
        self.session = await self.env.agent.open(self.ctx)

    async def close(self) -> None:
        """Close the session (always called)."""
        if self.session is not None:
            await self.session.close()

    async def send(
        self,
        user: list[Message],
        *,
        step_id: str | None = None,
        inp: TurnInput | None = None,
        meta: dict[str, Any] | None = None,
    ) -> TurnResult:
        """Send one user turn; record it (with the error, if the agent failed)."""
        assert self.session is not None
        index = len(self.turns)
        self.ctx.turn, self.ctx.input = index, inp
        self.ctx.metadata = dict(meta) if meta else {}
        self.messages.extend(user)
        turn = TurnResult(index=index, step_id=step_id, input=inp, messages=list(user))
        self.turns.append(turn)
        start = time.perf_counter()
        try:
            obs = await call_agent(
                self.session, self.messages, self.ctx, self.env.policy, self.attempts
            )
        except BaseException as exc:
            self.env.note_concurrency()
            # the agent's own SystemExit, KeyboardInterrupt, CancelledError or a test
            # framework's BaseException (pytest's Failed) is this turn's error; only a real
            # stop of the run propagates
            if isinstance(exc, asyncio.CancelledError) and stopping():
                raise
            turn.status, turn.error = "error", _agent_error(exc, index)
            turn.error_info = error_info(exc)
            turn.code = error_code(exc)
            turn.duration_ms = elapsed_ms(start)
            raise TurnFailed(turn.error, blame_of(exc, "agent"), turn.error_info) from exc
        self.env.note_concurrency()
        cap_reply(obs, self.env.max_reply_bytes)
        turn_id = turn_id_of(self.thread_id, step_id or str(index))
        effects = obs.effects
        if effects is None:  # agents that copy the world themselves are trusted with it
            world = self.ctx.world
            effects = copy.deepcopy(world) if world else {}
        obs.thread_id, obs.turn_id = self.thread_id, turn_id
        obs.trace_id = obs.trace_id or trace_of(turn_id)
        obs.effects = effects
        self.messages.extend(obs.messages)
        self._add_usage(obs)
        turn.observation = obs
        turn.duration_ms = elapsed_ms(start)
        return turn

    def _add_usage(self, obs: Observation) -> None:
        if obs.usage is None:
            return
        u = self.usage or Usage()
        self.usage = Usage(
            prompt_tokens=u.prompt_tokens + obs.usage.prompt_tokens,
            completion_tokens=u.completion_tokens + obs.usage.completion_tokens,
            total_tokens=u.total_tokens + obs.usage.total_tokens,
        )

    def context(self, turn: TurnResult | None, scope: str, **extra: Any) -> CheckContext:
        """The check context for a turn (or the last turn, for final scope)."""
        last = turn or (self.turns[-1] if self.turns else None)
        history = (
            self.turns if scope in ("final", "case") else self.turns[: last.index if last else 0]
        )
        return CheckContext(
            observation=(last.observation if last and last.observation else Observation()),
            messages=list(self.messages),
            history=list(history),
            case=self.case,
            input=last.input if last else None,
            turn_index=last.index if last else 0,
            world=self.ctx.world,
            judge=self.env.judge,
            judges=self.env.judges,
            scope=scope,
            multi_turn=self.case.mode == "turns",
            extra=extra,
        )

    async def check(
        self, specs: Sequence[Assertion], turn: TurnResult | None, scope: str, **extra: Any
    ) -> list[AssertionResult]:
        """Evaluate specs in order (all of them: no short-circuit)."""
        if not specs:
            return []
        ctx = self.context(turn, scope, **extra)
        return [await evaluate(spec, ctx) for spec in specs]

    def finish_turn(self, turn: TurnResult, results: list[AssertionResult]) -> None:
        """Record a turn's checks and tell the listeners."""
        turn.assertions = results
        turn.status = "error" if turn.status == "error" else status_of(results)
        share_reply_text(turn)
        turn.code = turn_code(turn)
        if self.env.listening:
            self.env.emit(TurnCompleted(self.inst.key, masked_turn(turn, self.env.secrets)))


def thread_id(run_id: str, inst: Instance) -> str:
    """`<run id>:<case id>`, the case id as intention-kernel's (matrix.ts `expandCases`:
    digest of `{scenarioId, variants, repetition}`).

    Decision: convlab's `runs` are the kernel's repetitions (a JSON suite has no
    repetitions of its own), so the repetition is `run * case.repetitions + repetition`.
    """
    return case_thread(run_id, inst.case.id, tuple(inst.variant.items()), kernel_repetition(inst))


def kernel_repetition(inst: Instance) -> int:
    """The instance's repetition as intention-kernel counts them (see `thread_id`)."""
    return inst.run * inst.case.repetitions + inst.repetition


def _agent_error(exc: BaseException, index: int) -> str:
    text = message_of(exc) or type(exc).__name__
    return f"agent error at turn {index + 1}: {type(exc).__name__}: {text}"
