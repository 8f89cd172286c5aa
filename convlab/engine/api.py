"""The engine's entry points: build a Runner from run()'s keywords, a background RunHandle,
and one quick message (`ask_once`). Listeners come in from outside: the engine imports no
view; `convlab.api` picks the progress view for users.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from convlab._durations import parse_duration
from convlab._sync import BackgroundLoop
from convlab.agents.cache import open_cassette
from convlab.agents.calls import RetryPolicy
from convlab.agents.pricing import Pricer, prices_from
from convlab.agents.protocol import Agent, AgentContext, as_agent, owned_by_run
from convlab.engine.conversation import Env, resolve_simulator
from convlab.engine.events import Listener
from convlab.engine.finished import error_text
from convlab.engine.replies import MAX_REPLY_BYTES
from convlab.engine.runner import Runner, Settings
from convlab.errors import SuiteError
from convlab.model.answer import Answer
from convlab.model.conversation import Message
from convlab.model.suite import Suite
from convlab.model.tracebacks import error_info
from convlab.plan import count

__all__ = ["RunHandle", "Started", "ask_once", "build_runner", "load_suite"]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


def load_suite(suite: Suite | str | Path) -> Suite:
    """`suite` itself, or the suite `convlab.load` reads from a path."""
    if isinstance(suite, Suite):
        return suite
    from convlab.formats import load

    return load(suite)


def _check_evaluators(suite: Suite) -> None:
    """Custom evaluator names are checked before any case runs."""
    from convlab.checks.api import unknown_evaluators

    problems = unknown_evaluators(suite)
    if problems:
        raise SuiteError(problems)


JSON_SUITE_MAX_CASES = 1000
"""intention-kernel's default `maxCases` (matrix.ts `expandCases`)."""


def _check_case_limit(suite: Suite, runs: int, max_cases: int | None) -> None:
    """EVALUATION_CASE_LIMIT before anything runs when the run has more instances than
    `max_cases` (intention-kernel matrix.ts `expandCases`: cases > maxCases throws).

    Decision: `max_cases=None` is the kernel's default of 1000 for a suite with JSON-suite
    cases and no limit for other formats, which have none; convlab's `runs` count as
    the kernel's repetitions (instances = scenarios x variant combinations x runs).
    """
    if max_cases is not None and (
        isinstance(max_cases, bool) or not isinstance(max_cases, int) or max_cases < 1
    ):
        raise ValueError(f"max_cases={max_cases!r}: use a positive integer or None")
    sources = [
        c.source for c in suite.cases if c.source is not None and c.source.format == "suite_json"
    ]
    limit = max_cases if max_cases is not None else JSON_SUITE_MAX_CASES if sources else None
    if limit is None:
        return
    total = count(suite, runs)
    if total > limit:
        file = (
            sources[0].file if sources else (suite.sources[0].file if suite.sources else suite.id)
        )
        raise SuiteError.one(
            file,
            None,
            "",
            f"EVALUATION_CASE_LIMIT: this run has {total} case instances (scenarios x variant "
            f"combinations x runs), more than max_cases={limit}; pass a higher max_cases "
            "(CLI: --max-cases) or select fewer cases",
        )


def build_runner(opts: dict[str, Any], listeners: list[Listener]) -> Runner:
    """The runner for run()/arun()/start()'s keyword arguments (their locals)."""
    suite = load_suite(opts["suite"])
    _check_evaluators(suite)
    _check_case_limit(suite, opts["runs"], opts.get("max_cases"))
    pricer = Pricer(prices_from(opts.get("prices")))
    settings = Settings(
        runs=opts["runs"],
        parallel=opts["parallel"],
        timeout_s=parse_duration(opts["timeout"]),
        fail_fast=opts["fail_fast"],
        allow_external_writes=opts["allow_external_writes"],
        store=str(opts["store"]) if opts["store"] else None,
        resume=opts["resume"],
        overwrite=opts["overwrite"],
        before=opts["before"],
        after=opts["after"],
        max_reply_bytes=opts.get("max_reply_bytes", MAX_REPLY_BYTES),
    )
    given = {"agent": opts["agent"], "judge": opts["judge"], "simulator": opts["simulator"]}
    built = {
        "agent": as_agent(given["agent"]),
        "judge": as_agent(given["judge"]) if given["judge"] is not None else None,
        "simulator": resolve_simulator(given["simulator"]),
    }
    passed = opts.get("judges") or {}
    judges = {key: as_agent(judge) for key, judge in passed.items()}
    borrowed = [built[k] for k, v in given.items() if not owned_by_run(v)]
    borrowed += [judges[k] for k, v in passed.items() if not owned_by_run(v)]
    env = Env(
        agent=built["agent"],
        suite=suite,
        policy=RetryPolicy(retries=opts["retries"]),
        simulator=built["simulator"],
        judge=built["judge"],
        judges=judges,
        timeout_s=settings.timeout_s,
        max_reply_bytes=settings.max_reply_bytes,
        parallel=settings.parallel,
        borrowed=tuple(borrowed),
        cassette=open_cassette(opts.get("cache"), opts.get("cache_dir")),
        pricer=pricer,
    )
    return Runner(env, settings, listeners)


class Started(Protocol[R_co]):
    """What a handle drives: a run's Runner, or an experiment's ExperimentRunner."""

    def execute(self) -> Coroutine[Any, Any, R_co]:
        """Run to the end; the result (partial if stopped)."""

    def finished(self) -> Any:
        """What finished so far."""


class RunHandle(Generic[R]):
    """A run (or an experiment) going on in the background: `stop()`, `wait()`, partial
    `results`. `cl.start(suite, agent)` gives a `RunHandle[Run]`; `cl.start(suite, {name:
    agent, ...})` a `RunHandle[Experiment]`, whose `results` are each variant's."""

    def __init__(
        self, runner: Started[R], factory: Callable[[], Coroutine[Any, Any, R]] | None = None
    ) -> None:
        self._runner = runner
        self._bg: BackgroundLoop[R] = BackgroundLoop(factory or runner.execute, name="convlab-run")

    def cancel(self) -> None:
        """Ask the run to stop without waiting (what a Stop button calls)."""
        self._bg.cancel()

    def stop(self) -> R:
        """Stop the run; finished instances are kept, the rest become `cancelled`."""
        self._bg.cancel()
        return self._bg.wait()

    def wait(self, timeout: float | None = None) -> R:
        """Block until the run ends and return it."""
        return self._bg.wait(timeout)

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self._bg.done

    @property
    def results(self) -> Any:
        """Instances finished so far: a list of CaseResults for a run (each built when read),
        a dict of such lists by variant for an experiment."""
        return self._runner.finished()

    @property
    def run(self) -> R | None:
        """The Run (or Experiment) once it has ended (partial if stopped), else None."""
        return self._bg.result if self.done else None

    def __repr__(self) -> str:
        run = self.run
        status = getattr(run, "status", None) if run is not None else "failed"
        state = "running" if not self.done else status or "done"
        results = self.results
        if isinstance(results, dict):
            counts = ", ".join(f"{k}: {len(v)}" for k, v in results.items())
        else:
            counts = str(len(results))
        return f"<RunHandle {state}: {counts} finished>"


def _history(history: Any) -> list[Message]:
    if history is None:
        return []
    if isinstance(history, str):
        return [Message(role="user", content=history)]
    return [m if isinstance(m, Message) else Message.model_validate(m) for m in history]


async def ask_once(
    agent: Any,
    message: str,
    assertions: Sequence[Any],
    history: Any = None,
    world: dict[str, Any] | None = None,
    judge: Any = None,
    raised: list[BaseException] | None = None,
) -> Answer:
    """Send one message (after an optional history) and check the reply.

    When the agent raises, the Answer has status `error` and says what was raised and where;
    the exception itself is appended to `raised` when given (`ask(raise_errors=True)`).
    """
    from convlab.checks import CheckContext, evaluate
    from convlab.checks.api import to_spec

    specs = [to_spec(a) for a in assertions]  # a bad assertion says so before any call
    the_agent: Agent = as_agent(agent)
    messages = [*_history(history), Message(role="user", content=message)]
    ctx = AgentContext(world=dict(world or {}), instance="ask")
    t0 = time.perf_counter()
    try:
        session = await the_agent.open(ctx)
        try:
            obs = await session.send(messages, ctx)
        finally:
            await session.close()
    except Exception as exc:  # the agent's bug (or its endpoint's failure): shown, not raised
        if raised is not None:
            raised.append(exc)
        return Answer(
            agent=the_agent.describe(),
            messages=messages,
            duration_ms=(time.perf_counter() - t0) * 1000,
            error=error_text(exc),
            error_info=error_info(exc),
        )
    finally:
        if owned_by_run(agent):  # the caller's own agent stays open for their next call
            await the_agent.aclose()
    took = (time.perf_counter() - t0) * 1000
    obs.effects = ctx.world
    the_judge = as_agent(judge) if judge is not None else None
    check_ctx = CheckContext(
        observation=obs, messages=messages + list(obs.messages), judge=the_judge
    )
    try:
        results = [await evaluate(spec, check_ctx) for spec in specs]
    finally:
        if the_judge is not None and owned_by_run(judge):
            await the_judge.aclose()
    return Answer(
        agent=the_agent.describe(),
        messages=messages,
        observation=obs,
        results=results,
        duration_ms=took,
    )
