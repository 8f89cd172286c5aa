"""The runner: `parallel` instances at once, per-instance timeouts, hooks, fail-fast,
the results store and the event stream. It imports no UI.
"""

from __future__ import annotations

import asyncio
import time
import uuid
import warnings
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from convlab.agents._secret import known_secrets, mask
from convlab.agents.cache import recording
from convlab.agents.meter import METER
from convlab.agents.protocol import CASE_DEADLINE, Agent
from convlab.engine._clock import now as _now
from convlab.engine._gc import quiet_gc
from convlab.engine.conversation import Conversation, Env, stopping
from convlab.engine.events import (
    CaseFinished,
    CaseStarted,
    Event,
    Listener,
    RunFinished,
    RunStarted,
    tell,
)
from convlab.engine.finished import closed, error_text, kept, result_of, timed_out
from convlab.engine.hooks import call_hook, resolve_hook
from convlab.engine.lanes import Lanes
from convlab.engine.modes import MODES, Outcome
from convlab.engine.replies import MAX_REPLY_BYTES
from convlab.engine.store import ResultStore
from convlab.engine.suite_checks import suite_checks
from convlab.errors import ExecutorError, HookFailed
from convlab.model.blame import Blame, blame_of
from convlab.model.records import CaseResult, ErrorInfo
from convlab.model.results import Results
from convlab.model.run import Run
from convlab.model.tracebacks import error_info
from convlab.plan import Instance, count, expand

if TYPE_CHECKING:
    from convlab.engine.executor import Executor

__all__ = ["Runner", "Settings"]

NOT_PLANNED = -1
SUPERSEDED = -2


@dataclass
class Settings:
    """How a run executes (everything run() takes besides the suite and the agent)."""

    runs: int = 1
    parallel: int = 4
    timeout_s: float = 120.0
    fail_fast: bool = False
    allow_external_writes: bool = False
    store: str | None = None
    resume: bool = False
    overwrite: bool = False
    """Replace an existing store of this suite (without it, or `resume`, one is refused)."""
    before: Any = None
    after: Any = None
    max_reply_bytes: int | None = MAX_REPLY_BYTES
    """A longer reply text is cut to this many UTF-8 bytes (None or 0: no cap)."""

    def public(self) -> dict[str, Any]:
        """Settings as recorded in the Run (no callables)."""
        return {
            "runs": self.runs,
            "parallel": self.parallel,
            "timeout_s": self.timeout_s,
            "fail_fast": self.fail_fast,
            "allow_external_writes": self.allow_external_writes,
            "store": self.store,
            "max_reply_bytes": self.max_reply_bytes,
        }


@dataclass
class Runner:
    """Executes a suite against an agent; `execute()` returns the Run (partial if cancelled)."""

    env: Env
    settings: Settings
    listeners: list[Listener] = field(default_factory=list)
    kept: Results = field(default_factory=Results)
    """Finished instances in the order they finished, as their encoded lines."""
    run: Run = field(default_factory=Run)
    _stop_picking: bool = False
    _warned: set[int] = field(default_factory=set)
    _store_problem: str | None = None
    _secrets: list[str] = field(default_factory=list)
    """The secret values known when the run started: masked in every result and the run."""
    _masked: int = 0
    """How many kept results had a secret masked (counted as they are kept: the run's end
    reads no result)."""
    _places: array[int] = field(default_factory=lambda: array("q"))
    """Each kept result's place in the plan (the Run lists results in plan order), beside
    `kept`; NOT_PLANNED: listed last; SUPERSEDED: left out (a stored cancelled instance that
    runs again)."""
    _done: bytearray = field(default_factory=bytearray)
    """Whether the instance at each place of the plan has finished (or was stored)."""
    _stored: dict[tuple[str, str, int, int], int] = field(default_factory=dict)
    """A resumed store's finished instances by key: their place in `kept`."""
    _planned_count: int = 0
    _stopped: dict[tuple[str, str, int, int], CaseResult] = field(default_factory=dict)
    """What an instance stopped mid-way got to (its worker records it as cancelled)."""
    _main: asyncio.Task[Any] | None = None
    """The task running `execute` (what a listener's stop cancels)."""
    _failure_blame: Blame = "hook"
    """Whose fault the run-level failure is (the run's before hook, unless it says otherwise)."""
    _failure_info: ErrorInfo | None = None
    """The exception of the run's before hook, which every instance it stopped records."""
    lanes: Lanes | None = None
    """The slots this run shares with the other variants of an experiment (None: its own
    `parallel`); `lane` is its place among them."""
    lane: int = 0
    executor: Executor | None = None
    """Where the planned instances run; None: here, `parallel` at a time."""
    _store: ResultStore | None = None

    def finished(self) -> Results:
        """The instances finished so far (a record is decoded when one is read: a poll of a
        big run's count or last result decodes no other)."""
        return self.kept.reordered(i for i, p in enumerate(self._places) if p != SUPERSEDED)

    def _hold(self, result: CaseResult, line: bytes, place: int) -> None:
        """Keep a finished instance as its line."""
        self._done[place] = 1
        self.kept.add_line(line, result.status)
        self._places.append(place)
        self._masked += bool(result.metadata.get("masked"))

    def _stored_at(self, inst: Instance, place: int) -> bool:
        """Whether a resumed store holds `inst`; if so, it is noted as done at `place`."""
        stored = self._stored.get(inst.key)
        if stored is None:
            return False
        self._places[stored] = place
        self._done[place] = 1
        return True

    def _ordered(self) -> Results:
        """The kept instances in plan order, those not in this plan last."""
        places = self._places
        kept = [i for i, p in enumerate(places) if p != SUPERSEDED]
        kept.sort(key=lambda i: places[i] if places[i] >= 0 else 1 << 60)
        return self.kept.reordered(kept)

    def emit(self, event: Event) -> None:
        """Tell every listener (convlab.engine.events.tell: a broken one never breaks the
        run; one that raises what is not an Exception stops it, keeping what finished)."""
        main = self._main
        stop = None if main is None or isinstance(event, RunFinished) else main.cancel
        tell(self.listeners, event, self._warned, stop)

    async def execute(self) -> Run:
        """Run every planned instance; Ctrl-C / stop() keeps finished results."""
        self._main = asyncio.current_task()
        with quiet_gc(), recording(self.env.cassette):  # suite checks' calls are recorded too
            return await self._execute()

    async def _execute(self) -> Run:
        self.env.emit, self.env.listening = self.emit, bool(self.listeners)
        suite, s = self.env.suite, self.settings
        self._secrets = known_secrets()  # what every result and the run are masked with
        self.env.secrets = self._secrets
        self.run = Run(
            id=uuid.uuid4().hex[:12],
            suite=suite,
            agent=mask(self.env.agent.describe(), self._secrets),
            agent_settings=mask(_settings_of(self.env.agent), self._secrets),
            settings=s.public(),
            started_at=_now(),
            status="running",
        )
        self.env.run_id = self.run.id
        try:
            store = ResultStore(s.store, self.run, s.resume, s.overwrite) if s.store else None
        except BaseException:
            await self.env.aclose()
            raise
        if store is not None:
            self.kept = store.stored  # the run goes on from the lines read back
            self._places = array("q", [SUPERSEDED]) * len(store.stored)
            for i in store.done.values():
                self._places[i] = NOT_PLANNED
            self._stored = store.done
            if store.skipped:  # never re-run them without a word
                warnings.warn(
                    f"{s.store}: {len(store.skipped)} stored line(s) could not be read, so "
                    f"their instances run again: {'; '.join(store.skipped[:3])}",
                    RuntimeWarning,
                    stacklevel=2,
                )
        total = count(suite, s.runs)
        self._done = bytearray(total)
        self.emit(RunStarted(self.run.id, total, self.run.agent, s.public(), len(self._stored)))
        cancelled, before_data, failure = False, None, None
        try:
            try:
                before_data = await call_hook(resolve_hook(s.before), suite)
            except Exception as exc:
                self._failure_info = error_info(exc)
                failure = f"before hook failed: {error_text(exc)}" + _at(exc)
                self._failure_blame = blame_of(exc, "hook")
            if failure is None:
                self._store, todo = store, self._planned()
                if self.executor is not None:
                    try:
                        await self.executor.execute(self, todo)
                    except ExecutorError as exc:  # its workers could not start: a failed run
                        failure, self._failure_blame = str(exc), "infrastructure"
                else:
                    await asyncio.gather(*(self._worker(todo) for _ in range(max(1, s.parallel))))
        except asyncio.CancelledError:
            cancelled = True
            _uncancel()
        finally:
            if self.lanes is not None:  # the other variants need not wait for this one
                self.lanes.leave(self.lane)
            if store is not None:
                try:
                    store.sync()  # every result is on disk before the run finishes
                except Exception as exc:  # the results are in memory: the Run says so
                    why = f"closing results store {s.store} failed: {error_text(exc)}"
                    self._store_problem = why
        # finishing (suite checks, the after hook, closing agents) survives a second stop
        finish = asyncio.ensure_future(self._finish(cancelled, before_data, failure))
        try:
            while True:
                try:
                    return await asyncio.shield(finish)
                except asyncio.CancelledError:
                    _uncancel()
                    self.run.status = "cancelled"
        finally:
            if store is not None:
                self._close_store(store)

    def _close_store(self, store: ResultStore) -> None:
        """Write how the run ended into its store, and close it (releasing its lock)."""
        try:
            store.close(self.run if self._store_problem is None else None)
        except Exception as exc:  # the results are in memory: the Run says so
            if self._store_problem is not None:
                return  # the run's error already says the store failed
            why = f"closing results store {store.path} failed: {error_text(exc)}"
            self.run.error = f"{self.run.error}; {why}" if self.run.error else why

    async def _finish(self, cancelled: bool, before_data: Any, failure: str | None) -> Run:
        suite, s = self.env.suite, self.settings
        if self._planned_count < count(suite, s.runs):  # not every instance was planned
            why = failure or "run stopped before it ran"
            for n, inst in enumerate(expand(suite, s.runs, s.allow_external_writes)):
                if not self._stored_at(inst, n) and not self._done[n]:
                    status = "error" if failure else "cancelled"
                    info = self._failure_info if failure else None
                    self._keep(closed(inst, status, why, self._failure_blame, info), n)
        self.run.results = self._ordered()
        self.run.status = "failed" if failure else "cancelled" if cancelled else "completed"
        self.run.error = failure
        if suite.assertions:
            self.run.suite_assertions = await suite_checks(self.run)
        self.run.finished_at = _now()
        if self.env.cassette is not None:  # what the cache did, for the user to see
            self.run.settings["cache"] = self.env.cassette.summary()
        concurrency = self.env.agent.concurrency()
        if concurrency is not None:  # the adaptive limit, stuck requests, slot waits
            self.run.settings["transport"] = concurrency.summary()
        try:
            await call_hook(resolve_hook(s.after), self.run, before_data)
        except Exception as exc:
            self.run.status = "failed"
            self.run.error = f"after hook failed: {error_text(exc)}" + _at(exc)
        problems = await self.env.aclose()  # a failing close never loses the Run
        if self._store_problem:
            problems.insert(0, self._store_problem)
        if problems:
            self.run.error = "; ".join([self.run.error, *problems] if self.run.error else problems)
        self._mask_run()
        self.emit(RunFinished(self.run))
        return self.run

    def _mask_run(self) -> None:
        """Mask the known secrets in the run's own error and settings, as each result is
        masked when it is kept; `settings["masked"]` says where, and how many results were."""
        where: list[str] = []
        if self.run.error:
            self.run.error = mask(self.run.error, self._secrets, where, "error")
        self.run.settings = mask(self.run.settings, self._secrets, where, "settings")
        if self._masked:
            where.append(f"{self._masked} result(s): see each result's metadata['masked']")
        if where:
            self.run.settings["masked"] = where

    def _planned(self) -> Iterator[tuple[int, Instance]]:
        """The instances to run with their places in the plan (the Run lists results in plan
        order); the place of one already held (read back from the store) is noted."""
        s = self.settings
        for n, inst in enumerate(expand(self.env.suite, s.runs, s.allow_external_writes)):
            self._planned_count = n + 1
            if not self._stored_at(inst, n):
                yield n, inst

    @property
    def picking(self) -> bool:
        """Whether new instances may start (False after a failure under `fail_fast`)."""
        return not self._stop_picking

    def accept(self, place: int, inst: Instance, result: CaseResult) -> CaseResult:
        """Keep (and store) an instance that finished, tell the listeners, and stop picking
        new ones after a failure under `fail_fast`; the result as finally recorded. An
        instance already finished is not kept twice: its first result stays."""
        if self._done[place]:
            return result
        result = self._keep(result, place, self._store)
        if self.listeners:
            self.emit(CaseFinished(result, inst.label))
        if self.settings.fail_fast and result.status in ("failed", "error", "timeout"):
            self._stop_picking = True
        return result

    def unfinished(self, place: int, inst: Instance, why: str) -> None:
        """Keep an instance stopped before or while it ran as `cancelled` (not stored)."""
        if not self._done[place]:
            stopped = self._stopped.pop(inst.key, None)
            self._keep(stopped or closed(inst, "cancelled", why), place)

    async def _worker(self, todo: Iterator[tuple[int, Instance]]) -> None:
        for place, inst in todo:
            if self._stop_picking:
                return
            try:
                if self.lanes is None:
                    result = await self.run_instance(inst)
                else:
                    async with self.lanes.slot(self.lane):
                        result = await self.run_instance(inst)
            except asyncio.CancelledError:
                self.unfinished(place, inst, "run stopped while it ran")
                raise
            self.accept(place, inst, result)

    def _keep(self, result: CaseResult, place: int, store: ResultStore | None = None) -> CaseResult:
        """Record a finished instance: encoded, stored when there is a store, and kept; its
        result as finally recorded."""
        final, line = kept(store, result, self._secrets)
        self._hold(final, line, place)
        return final

    async def run_instance(self, inst: Instance) -> CaseResult:
        """Run one instance to its CaseResult within its timeout; never raises (but for
        cancellation, when what it got to is left in `_stopped`)."""
        case = inst.case
        if case.skip:
            return closed(inst, "skipped", case.skip)
        if inst.blocked:
            return closed(inst, "blocked", inst.blocked)
        started, t0 = _now(), time.perf_counter()
        if self.listeners:
            self.emit(CaseStarted(inst.key, inst.label, case.mode, case.name))
        conv = Conversation(inst, self.env)
        timeout = case.limits.timeout_s or self.env.timeout_s
        try:
            with recording(self.env.cassette, *inst.key):
                outcome = await self._converse(conv, timeout)
        except asyncio.CancelledError:  # keep what the conversation got to
            why = "run stopped while it ran" + (f"; {conv.hook_error}" if conv.hook_error else "")
            stopped = Outcome("cancelled", why, checkpoints=conv.checkpoints)
            self._stopped[inst.key] = result_of(inst, conv, stopped, started, t0)
            raise
        return result_of(inst, conv, outcome, started, t0)

    async def _converse(self, conv: Conversation, timeout: float) -> Outcome:
        """The hooks and the conversation, within the per-case timeout; user code's faults
        (whatever it raises, a blocked loop) end in this case's outcome, never the run."""
        case = conv.case
        near = case.source.file if case.source else None
        outcome: Outcome  # every way out of the try below sets it
        data = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        site: Blame = "hook"  # whose code runs now: the before hook, then the agent's session

        hooked = case.hooks.after is not None

        async def after(outcome: Outcome) -> None:
            if hooked:
                async with asyncio.timeout(timeout):
                    await call_hook(resolve_hook(case.hooks.after, near), case, outcome, data)

        deadline_token = CASE_DEADLINE.set(deadline)  # what the transport's pauses respect
        meter_token = METER.set(conv.meter)  # what the model calls used, by role
        try:
            async with asyncio.timeout_at(deadline):
                try:
                    if case.hooks.before is not None:
                        data = await call_hook(resolve_hook(case.hooks.before, near), case)
                except Exception as exc:
                    raise HookFailed(f"before hook failed: {error_text(exc)}", exc) from exc
                site = "agent"
                await conv.open()
                try:
                    outcome = await MODES[case.mode](conv)
                finally:
                    await conv.close()
            if loop.time() > deadline:  # the loop was blocked, so the timeout could not fire
                outcome = timed_out(conv, timeout)
        except TimeoutError:
            outcome = timed_out(conv, timeout)
        except asyncio.CancelledError as exc:
            if not stopping():  # user code raised it: its fault, not a stop
                outcome = Outcome("error", error_text(exc), blame=site, error_info=error_info(exc))
            else:
                # `after` always runs, also for an instance stopped mid-way
                try:
                    await asyncio.shield(after(Outcome("cancelled", "run stopped while it ran")))
                except Exception as hook_exc:
                    conv.hook_error = f"after hook failed: {error_text(hook_exc)}"
                raise
        except HookFailed as exc:
            outcome = Outcome(
                "error",
                str(exc),
                blame=blame_of(exc.original, "hook"),
                error_info=error_info(exc.original),
            )
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, pytest's Failed ...
            outcome = Outcome(
                "error", error_text(exc), blame=blame_of(exc, site), error_info=error_info(exc)
            )
        finally:
            CASE_DEADLINE.reset(deadline_token)
            METER.reset(meter_token)
        if not hooked:
            return outcome
        try:
            await after(outcome)
        except Exception as exc:
            why = f"after hook failed: {error_text(exc)}"
            if outcome.status == "passed":
                outcome = Outcome(
                    "error",
                    why,
                    outcome.assertions,
                    outcome.checkpoints,
                    blame=blame_of(exc, "hook"),
                    error_info=error_info(exc),
                )
            else:
                why = f"{outcome.error}; {why}" if outcome.error else why
                outcome = replace(
                    outcome, error=why, error_info=outcome.error_info or error_info(exc)
                )
        return outcome


def _at(exc: BaseException) -> str:
    """` (at hooks.py:3 in after)`: where the user's code raised `exc`, for the Run's `error`
    (a text: the Run has no record of the exception); '' when no frame was the user's."""
    where = error_info(exc).location
    return f" (at {where})" if where else ""


def _uncancel() -> None:
    """The run handles its own cancellation: it finishes and returns the partial Run."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _settings_of(agent: Agent) -> dict[str, Any]:
    """`agent.settings()`; a user's own override that fails says why instead of the settings."""
    try:
        return agent.settings()
    except Exception as exc:  # a user's Agent subclass: its run goes on
        return {"spec": agent.describe(), "settings_error": error_text(exc)}
