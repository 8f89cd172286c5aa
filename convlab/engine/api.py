"""The public entry points: run, arun, start, ask."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convlab._util import parse_duration
from convlab.agents.protocol import Agent, AgentContext, as_agent
from convlab.engine._sync import BackgroundLoop, run_sync
from convlab.engine.calls import RetryPolicy
from convlab.engine.conversation import Env, resolve_simulator
from convlab.engine.events import Listener
from convlab.engine.runner import Runner, Settings
from convlab.errors import SuiteError
from convlab.model.results import CaseResult, Run
from convlab.model.suite import Suite

__all__ = ["RunHandle", "arun", "ask", "run", "start"]


def _suite(suite: Suite | str | Path) -> Suite:
    if isinstance(suite, Suite):
        return suite
    from convlab.formats import load

    return load(suite)


def _progress(progress: Any) -> list[Listener]:
    if progress is False:
        return []
    if callable(progress):
        return [progress]
    from convlab.report.console import ConsoleProgress

    return [ConsoleProgress()]


def _check_evaluators(suite: Suite) -> None:
    """Custom evaluator names are checked before any case runs."""
    from convlab.checks.api import unknown_evaluators

    problems = unknown_evaluators(suite)
    if problems:
        raise SuiteError(problems)


def _runner(opts: dict[str, Any]) -> Runner:
    """Build the runner from the keyword arguments of run()/arun()/start() (their locals)."""
    suite = _suite(opts["suite"])
    _check_evaluators(suite)
    settings = Settings(
        runs=opts["runs"],
        parallel=opts["parallel"],
        timeout_s=parse_duration(opts["timeout"]),
        fail_fast=opts["fail_fast"],
        allow_external_writes=opts["allow_external_writes"],
        store=str(opts["store"]) if opts["store"] else None,
        resume=opts["resume"],
        before=opts["before"],
        after=opts["after"],
    )
    judge = opts["judge"]
    env = Env(
        agent=as_agent(opts["agent"]),
        suite=suite,
        policy=RetryPolicy(retries=opts["retries"]),
        simulator=resolve_simulator(opts["simulator"]),
        judge=as_agent(judge) if judge is not None else None,
        timeout_s=settings.timeout_s,
    )
    return Runner(env, settings, _progress(opts["progress"]))


async def arun(
    suite: Suite | str | Path,
    agent: Any,
    *,
    runs: int = 1,
    parallel: int = 4,
    timeout: str | float = "2m",
    simulator: Any = None,
    judge: Any = None,
    store: str | Path | None = None,
    resume: bool = False,
    fail_fast: bool = False,
    progress: Any = None,
    retries: int = 3,
    allow_external_writes: bool = False,
    before: Any = None,
    after: Any = None,
) -> Run:
    """Run a suite against an agent (awaitable: the notebook's first-class path).

    Args:
        suite: A Suite, or a path that `convlab.load` reads.
        agent: A function `f(messages)` / `f(messages, ctx)`, an Agent, or a spec string
            (`demo:NAME`, `openai:MODEL`, `http:URL`, `module:function`).
        runs: Repeat every case this many times (stability).
        parallel: Instances at once.
        timeout: Per-instance timeout (`"2m"`, `"30s"` or seconds); a case's own wins.
        simulator: The user simulator for dynamic and code-test cases (default: scripted).
        judge: The agent that answers judge assertions.
        store: A JSONL results store; every finished instance is appended at once.
        resume: Skip the instances already in `store`.
        fail_fast: Start nothing new after the first failure, error or timeout.
        progress: None (text progress), False (nothing) or an event listener.
        retries: Retries of transient agent failures (429, 5xx, connection errors).
        allow_external_writes: Run cases whose write policy is `external`.
        before: A run-level hook called with the suite before any case.
        after: A run-level hook called with the Run and the before hook's result.
    """
    runner = _runner(locals())
    return await runner.execute()


def run(
    suite: Suite | str | Path,
    agent: Any,
    *,
    runs: int = 1,
    parallel: int = 4,
    timeout: str | float = "2m",
    simulator: Any = None,
    judge: Any = None,
    store: str | Path | None = None,
    resume: bool = False,
    fail_fast: bool = False,
    progress: Any = None,
    retries: int = 3,
    allow_external_writes: bool = False,
    before: Any = None,
    after: Any = None,
) -> Run:
    """Run a suite against an agent and block until it ends (scripts, cells, CLI).

    Takes the same arguments as `arun`. In a notebook cell the engine runs on a private
    loop in a worker thread; interrupting the kernel stops it and returns the partial Run
    (finished instances kept, the rest `cancelled`).
    """
    runner = _runner(locals())
    return run_sync(runner.execute)


class RunHandle:
    """A run going on in the background: `stop()`, `wait()`, partial `results`."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner
        self._bg: BackgroundLoop[Run] = BackgroundLoop(runner.execute, name="convlab-run")

    def stop(self) -> Run:
        """Stop the run; finished instances are kept, the rest become `cancelled`."""
        self._bg.cancel()
        return self._bg.wait()

    def wait(self, timeout: float | None = None) -> Run:
        """Block until the run ends and return it."""
        return self._bg.wait(timeout)

    @property
    def done(self) -> bool:
        """Whether the run has ended."""
        return self._bg.done

    @property
    def results(self) -> list[CaseResult]:
        """Instances finished so far."""
        return list(self._runner.results.values())

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        return f"<RunHandle {state}: {len(self.results)} finished>"


def start(
    suite: Suite | str | Path,
    agent: Any,
    *,
    runs: int = 1,
    parallel: int = 4,
    timeout: str | float = "2m",
    simulator: Any = None,
    judge: Any = None,
    store: str | Path | None = None,
    resume: bool = False,
    fail_fast: bool = False,
    progress: Any = False,
    retries: int = 3,
    allow_external_writes: bool = False,
    before: Any = None,
    after: Any = None,
) -> RunHandle:
    """Start a run in the background and return a handle (`stop()`, `wait()`, `results`)."""
    runner = _runner(locals())
    return RunHandle(runner)


class Answer:
    """The agent's answer to one quick message, with the checks' results."""

    def __init__(self, observation: Any, results: Sequence[Any]) -> None:
        self.observation, self.results = observation, list(results)

    @property
    def text(self) -> str:
        """The reply text."""
        return self.observation.text or ""

    @property
    def passed(self) -> bool:
        """Whether every check passed (True when there were none)."""
        return all(r.passed for r in self.results)

    def __repr__(self) -> str:
        lines = [f"agent: {self.text}"]
        lines += [f"tool: {c.name}({c.arguments})" for c in self.observation.tool_calls]
        if self.observation.data is not None:
            lines.append(f"data: {self.observation.data!r}")
        lines += [repr(r) for r in self.results]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"


def ask(agent: Any, message: str, *assertions: Any, world: dict[str, Any] | None = None) -> Answer:
    """Send one message to an agent and check the reply: a quick test in a cell.

    Example:
        >>> ask(lambda m: "hi there", "Hello", {"type": "contains", "value": "hi"}).passed
        True
    """

    async def go() -> Answer:
        from convlab.model.conversation import Message

        the_agent: Agent = as_agent(agent)
        ctx = AgentContext(world=dict(world or {}), instance="ask")
        session = await the_agent.open(ctx)
        try:
            obs = await session.send([Message(role="user", content=message)], ctx)
        finally:
            await session.close()
            await the_agent.aclose()
        obs.effects = ctx.world
        results = []
        if assertions:
            from convlab.checks.api import check

            results = [await asyncio.to_thread(check, obs, a) for a in assertions]
        return Answer(obs, results)

    return run_sync(go)
