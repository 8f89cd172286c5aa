"""The public entry points: run, arun, start and ask, with the progress view picked for users.

The engine emits events and knows no view. Here `progress=None` becomes the live widget tree
in a kernel whose front end shows widgets (convlab.notebook.progress) and text progress
elsewhere (convlab.report.console); a Stop button is offered only where stopping works.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import sys
import typing
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack, overload

from convlab import executors
from convlab._history import HISTORY_KEEP, record_later
from convlab._sync import run_sync
from convlab.engine.api import RunHandle, ask_once, build_runner
from convlab.engine.experiment import ExperimentRunner, build_experiment
from convlab.engine.runner import Runner
from convlab.model.answer import Answer
from convlab.model.experiment import Experiment
from convlab.model.run import Run
from convlab.model.suite import Suite
from convlab.model.tracebacks import from_user_code

__all__ = ["RUN_DEFAULTS", "RunHandle", "RunOptions", "arun", "ask", "run", "start"]

PROGRESS_CHOICES = (None, False, True, "widget", "text")


class RunOptions(TypedDict, total=False):
    """The keyword arguments `run`, `arun` and `start` share (defaults in RUN_DEFAULTS)."""

    runs: int
    parallel: int
    timeout: str | float
    simulator: Any
    judge: Any
    judges: dict[str, Any] | None
    store: str | Path | None
    resume: bool
    overwrite: bool
    fail_fast: bool
    progress: Any
    retries: int
    allow_external_writes: bool
    before: Any
    after: Any
    max_reply_bytes: int | None
    max_cases: int | None
    cache: Literal["record", "replay", "auto"] | None
    cache_dir: str | Path | None
    history: bool
    history_keep: int | None
    prices: dict[str, Any] | None
    executor: Any
    experiment: str | None


RUN_DEFAULTS: RunOptions = {
    "runs": 1,
    "parallel": 4,
    "timeout": "2m",
    "simulator": None,
    "judge": None,
    "judges": None,
    "store": None,
    "resume": False,
    "overwrite": False,
    "fail_fast": False,
    "progress": None,
    "retries": 3,
    "allow_external_writes": False,
    "before": None,
    "after": None,
    "max_reply_bytes": 1_000_000,
    "max_cases": None,
    "cache": None,
    "cache_dir": None,
    "history": True,
    "history_keep": HISTORY_KEEP,
    "prices": None,
    "executor": None,
    "experiment": None,
}

OPTIONS_DOC = """
    Args:
        suite: A Suite, or a path that `convlab.load` reads.
        agent: A function `f(messages)` / `f(messages, ctx)` (messages are OpenAI-style
            dicts: `messages[-1]["content"]`), an Agent, or a spec string (`demo:NAME`,
            `openai:MODEL`, `http:URL`, `module:function`). A dict of them by name,
            `{"short": agent_a, "long": agent_b}`, runs every variant on the suite under one
            `parallel`, their instances taking turns, and returns an Experiment (one Run
            per variant; a variant's `store` is the path with its name before the suffix:
            `out.jsonl` -> `out.short.jsonl`).
        runs: Repeat every case this many times (stability).
        parallel: Instances at once.
        timeout: Per-instance timeout (`"2m"`, `"30s"` or seconds); a case's own wins.
        simulator: The user simulator for dynamic and code-test cases (default: scripted).
        judge: The agent that answers judge assertions.
        judges: Agents by the id an assertion names, e.g. `{"agents:validator": agent}`
            for Yao's `{"type": "agent", "use": "agents:validator"}` (else the judge).
        store: A JSONL results store; every finished instance is appended at once.
        resume: Skip the instances already in `store`.
        overwrite: Replace `store` when it holds an earlier run of this suite. Without
            `resume` or `overwrite` an existing store is never written over, and a file that
            is not a results store of this suite never is.
        fail_fast: Start nothing new after the first failure, error or timeout.
        progress: None picks the live widget tree in a notebook and text elsewhere;
            "widget" or "text" force one; False shows nothing; a callable receives every
            engine event.
        retries: Retries of transient agent failures (429, 5xx, connection errors).
        allow_external_writes: Run cases whose write policy is `external`.
        before: A run-level hook called with the suite before any case.
        after: A run-level hook called with the Run and the before hook's result.
        max_reply_bytes: A reply text longer than this many UTF-8 bytes is cut to it, and
            its turn's observation says so (`truncated_from`: the original size); None: no cap.
        max_cases: Most case instances (cases x variant combinations x runs) the run may
            have; more is an error (EVALUATION_CASE_LIMIT) before anything runs. None:
            1000 for JSON evaluation suites (intention-kernel's default), else no limit.
        cache: Record and replay the calls that leave the process (HTTP and OpenAI-compatible
            agents, simulators and judges; functions marked `@cl.cached`): "record" makes
            every call live and keeps it, "replay" answers from recordings only (a call never
            recorded fails its case, naming case and turn; nothing goes live), "auto"
            replays what exists and records the rest; None: no cache. The counts land in
            `run.settings["cache"]`.
        cache_dir: The recordings folder (default `./convlab-cache`): small JSON files, one
            per call, named by the hash of what it sent; commit it next to the suite.
        history: Record the run when it ends (stopped ones too) in the history database,
            `history.db` in `$CONVLAB_HOME` or `~/.convlab` (`cl.history()` lists them,
            `cl.load_run(history_id)` brings one back); False records nothing. An entry
            that cannot be written is a warning, `run.settings["history"]` says why, and
            the run is returned as ever. The entry is written in the background: the run
            returns when its last result is in (a process that ends first waits for it).
        history_keep: How many runs the history keeps: recording one deletes the oldest
            entries past this many, and their kept copies (CLI: `--history-keep N`, also
            `history_keep: N` in convlab.yaml); None keeps every run.
        prices: Prices of models genai-prices does not know, or that you pay otherwise for:
            `{"my-model": {"input_mtok": 0.5, "output_mtok": 1.5}}` (US dollars per million
            tokens), keyed by the model name the endpoint reports. Every model call's usage
            is priced by role (agent, simulator, judge): `Run.df["cost_usd"]`.
        executor: Where the instances run: None (or "local") here; "ray" on a private
            local Ray cluster; "ray:auto", "ray:HOST:PORT" or `cl.executors.ray(address=...,
            workers=N, per_worker=M)` on an existing one (`pip install 'convlab[ray]'`). The
            results, the store and the live tree are the same.
        experiment: A name for the experiment (with a dict of agents; default: the variants'
            names joined by "vs").
"""


def _shares_run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give `fn(suite, agent, **options)` the exact signature and docs of the options, so
    `help()` and editors show every keyword with its default (written once, here)."""
    hints = typing.get_type_hints(RunOptions)
    given = typing.get_type_hints(fn)
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [
        inspect.Parameter("suite", positional, annotation=given["suite"]),
        inspect.Parameter("agent", positional, annotation=given["agent"]),
    ]
    params += [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=RUN_DEFAULTS[name],  # type: ignore[literal-required]
            annotation=hints[name],
        )
        for name in RUN_DEFAULTS
    ]
    ret = given["return"]
    fn.__signature__ = inspect.Signature(params, return_annotation=ret)  # type: ignore[attr-defined]
    fn.__doc__ = (fn.__doc__ or "").rstrip() + "\n" + OPTIONS_DOC
    return fn


def _options(where: str, suite: Any, agent: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The options with defaults filled in; an unknown keyword is a TypeError with a hint."""
    unknown = [k for k in given if k not in RUN_DEFAULTS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(RUN_DEFAULTS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}.{hint}")
    return {"suite": suite, "agent": agent, **RUN_DEFAULTS, **given}


class _View:
    """The chosen progress view: its listeners and how to close it when a run ends (where
    the run is recorded in the history, for every way of running)."""

    def __init__(self, listeners: list[Any], tree: Any = None) -> None:
        self.listeners, self.tree = listeners, tree
        self.history = False
        self.keep: int | None = HISTORY_KEEP

    def show(self, stop: Callable[[], None] | None, hint: str = "") -> None:
        """Show the tree in the cell, with a Stop button that calls `stop` (or, None, a hint
        saying how to stop instead)."""
        if self.tree is not None:
            self.tree.bind_stop(stop, hint)
            self.tree.show()

    def close(self, result: Run | Experiment | None = None) -> None:
        """The run or experiment has ended (`result`: None when it raised): hand it to the
        history (each variant's run under the experiment's name; written in the background),
        then close the tree."""
        try:
            if self.history and isinstance(result, Run):
                record_later(result, keep=self.keep)  # never raises for a history problem
            elif self.history and isinstance(result, Experiment):
                for variant, run in result.runs.items():
                    record_later(run, experiment=result.name, variant=variant, keep=self.keep)
        finally:
            if self.tree is not None:
                self.tree.close(result)


def _check_progress(progress: Any) -> None:
    if not callable(progress) and progress not in PROGRESS_CHOICES:
        raise ValueError(
            f"progress={progress!r}: use None (pick), 'widget', 'text', False or a listener"
        )


def _is_experiment(opts: dict[str, Any]) -> bool:
    """Whether the agents come as {name: agent} (an experiment) rather than one agent."""
    if isinstance(opts["agent"], Mapping):
        return True
    if opts.get("experiment") is not None:
        raise ValueError(
            "experiment= names an experiment of several variants: pass the agents as a dict "
            '{"name": agent, ...}'
        )
    return False


def _runner_and_view(
    where: str, suite: Any, agent: Any, given: dict[str, Any]
) -> tuple[Runner | ExperimentRunner, _View]:
    """The runner (one run, or an experiment when `agent` is a dict of variants), then the
    view (no widget is made for a suite that fails to load)."""
    opts = _options(where, suite, agent, given)
    _check_progress(opts["progress"])
    if not isinstance(opts["history"], bool):
        raise ValueError(f"history={opts['history']!r}: use True (record the run) or False")
    keep = opts["history_keep"]
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ValueError(f"history_keep={keep!r}: use a whole number of runs >= 1, or None")
    if _is_experiment(opts):
        experiment = build_experiment(opts, [])
        runners = list(experiment.runners.values())  # refuses what cannot travel
        for one, executor in zip(
            runners, executors.bind_each(opts["executor"], runners), strict=True
        ):
            one.executor = executor
        view = _view(opts["progress"], experiment=True)
        view.history, view.keep = opts["history"], keep
        experiment.listeners.extend(view.listeners)
        return experiment, view
    runner = build_runner(opts, [])
    runner.executor = executors.bind(opts["executor"], runner)  # refuses what cannot travel
    view = _view(opts["progress"])
    view.history, view.keep = opts["history"], keep
    runner.listeners.extend(view.listeners)
    return runner, view


def _view(progress: Any, experiment: bool = False) -> _View:
    """Listeners for `progress`: None/True (pick), "widget", "text", False or a callable
    (which gets the experiment's events when `experiment`)."""
    if progress is False:
        return _View([])
    if callable(progress):
        return _View([progress])
    from convlab.notebook.progress import in_kernel, widget_frontend

    if progress == "widget" or (progress in (None, True) and widget_frontend()):
        if experiment:
            from convlab.notebook._progress_experiment import ExperimentTree

            tree: Any = ExperimentTree()
        else:
            from convlab.notebook.progress import LiveTree

            tree = LiveTree()
        return _View([tree], tree)
    # in a kernel stderr is drawn as an error block: progress goes to stdout there
    stream = sys.stdout if in_kernel() else sys.stderr
    if experiment:
        from convlab.report._console_experiment import ExperimentConsole

        return _View([ExperimentConsole(stream=stream)])
    from convlab.report.console import ConsoleProgress

    return _View([ConsoleProgress(stream=stream)])


def _ended(result: Run | Experiment | None) -> Run | Experiment:
    """The result of a run that returned (a failed one raised before this)."""
    assert result is not None
    return result


@overload
async def arun(
    suite: Suite | str | Path, agent: Mapping[str, Any], **options: Unpack[RunOptions]
) -> Experiment: ...
@overload
async def arun(suite: Suite | str | Path, agent: Any, **options: Unpack[RunOptions]) -> Run: ...
@_shares_run_options
async def arun(
    suite: Suite | str | Path, agent: Any, **options: Unpack[RunOptions]
) -> Run | Experiment:
    """Run a suite against an agent (awaitable: the notebook's first-class path); a dict of
    agents by name runs them all as an Experiment.

    Stopping (the widget's Stop button, or interrupting the kernel) returns the partial Run:
    finished instances kept, the rest `cancelled`.
    """
    runner, view = _runner_and_view("arun", suite, agent, dict(options))
    result: Run | Experiment | None = None
    task: asyncio.Future[Any] = asyncio.ensure_future(runner.execute())
    loop = asyncio.get_running_loop()

    def stop() -> None:  # a widget click arrives on the kernel's thread
        loop.call_soon_threadsafe(task.cancel)

    view.show(stop)
    try:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:  # the cell was interrupted: stop, keep what finished
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            task.cancel()
            result = await task
    finally:
        view.close(result)
    return _ended(result)


@overload
def run(
    suite: Suite | str | Path, agent: Mapping[str, Any], **options: Unpack[RunOptions]
) -> Experiment: ...
@overload
def run(suite: Suite | str | Path, agent: Any, **options: Unpack[RunOptions]) -> Run: ...
@_shares_run_options
def run(suite: Suite | str | Path, agent: Any, **options: Unpack[RunOptions]) -> Run | Experiment:
    """Run a suite against an agent and block until it ends (scripts, cells, CLI); a dict of
    agents by name runs them all as an Experiment.

    In a notebook cell the engine runs on a private loop in a worker thread; interrupting the
    kernel stops it and returns the partial Run (finished instances kept, the rest
    `cancelled`).
    """
    runner, view = _runner_and_view("run", suite, agent, dict(options))
    # a blocking cell cannot receive a button click: the kernel's interrupt is the way
    view.show(None, "interrupt the kernel (■) to stop; finished cases are kept")
    execute: Callable[[], Coroutine[Any, Any, Run | Experiment]] = runner.execute
    result: Run | Experiment | None = None
    try:
        result = run_sync(execute)
    finally:
        view.close(result)
    return _ended(result)


@overload
def start(
    suite: Suite | str | Path, agent: Mapping[str, Any], **options: Unpack[RunOptions]
) -> RunHandle[Experiment]: ...
@overload
def start(
    suite: Suite | str | Path, agent: Any, **options: Unpack[RunOptions]
) -> RunHandle[Run]: ...
@_shares_run_options
def start(
    suite: Suite | str | Path, agent: Any, **options: Unpack[RunOptions]
) -> RunHandle[Run] | RunHandle[Experiment]:
    """Start a run in the background and return a handle (`stop()`, `wait()`, `results`); a
    dict of agents by name starts an Experiment.

    In a notebook the live tree has a Stop button; `handle.stop()` does the same.
    """
    runner, view = _runner_and_view("start", suite, agent, dict(options))

    async def go() -> Any:
        result: Run | Experiment | None = None
        try:
            result = await runner.execute()
        finally:
            view.close(result)
        return _ended(result)

    handle: RunHandle[Any] = RunHandle(runner, go)
    view.show(handle.cancel)
    return handle


def ask(
    agent: Any,
    message: str,
    *assertions: Any,
    history: Any = None,
    world: dict[str, Any] | None = None,
    judge: Any = None,
    raise_errors: bool = False,
) -> Answer:
    """Send one message to an agent and check the reply: a quick test in a cell.

    An agent that raises does not raise here: the Answer has status `error` and shows the
    exception with the file and line of your code that raised it and a short traceback.

    Args:
        agent: A function, an Agent or a spec string (`demo:expense`, `openai:MODEL`, ...).
        message: The user message.
        *assertions: Assertions in any format's spelling (`{"type": "contains", ...}`).
        history: Earlier messages (OpenAI-style dicts or `cl.Message`s) sent before it.
        world: The starting world state the agent sees as `ctx.world`.
        judge: The judge for judge-based assertions.
        raise_errors: Raise what the agent raised instead, with its traceback from your
            code on, so that `%debug` (or `pdb.pm()`) opens in the frame that raised.

    Returns:
        An Answer; a notebook renders it as a chat transcript with a mark per assertion.

    Example:
        >>> ask(lambda m: "hi there", "Hello", {"type": "contains", "value": "hi"}).passed
        True
    """
    # IPython (a notebook, %debug) leaves this frame out of the traceback it prints and of
    # the frames its debugger walks: what the user sees goes from their call to their agent
    __tracebackhide__ = True
    raised: list[BaseException] = []
    kept = raised if raise_errors else None
    answer = run_sync(lambda: ask_once(agent, message, assertions, history, world, judge, kept))
    if raised:
        exc = raised[0]
        raise exc.with_traceback(from_user_code(exc.__traceback__))
    return answer
