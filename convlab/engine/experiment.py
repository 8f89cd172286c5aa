"""Variants in one call: one Runner per variant, all under one `parallel`.

Each variant's runner is the one a run of that variant alone would use (its own agent, plan,
store, hooks and events), so each variant's Run is what that run would give. They share one
set of slots (convlab.engine.lanes), handed out in turn, so every variant starts at once
and none waits for another to finish. Stopping stops every variant; each keeps what finished.

A variant's store: `store="out.jsonl"` becomes `out.short.jsonl`, `out.long.jsonl`, ... (the
variant's name, made safe for a file name, before the suffix).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from convlab.engine._clock import now as _now
from convlab.engine.api import build_runner, load_suite
from convlab.engine.events import (
    Event,
    ExperimentEvent,
    ExperimentFinished,
    ExperimentListener,
    ExperimentStarted,
    VariantEvent,
    tell,
)
from convlab.engine.lanes import Lanes
from convlab.engine.runner import Runner
from convlab.engine.store import StoreError
from convlab.model.experiment import Experiment
from convlab.model.records import CaseResult
from convlab.model.run import Run
from convlab.plan import count

__all__ = [
    "ExperimentRunner",
    "build_experiment",
    "check_variants",
    "variant_store",
]

_UNSAFE = re.compile(r"[^\w.+-]+")


def check_variants(agents: Mapping[Any, Any]) -> dict[str, Any]:
    """The variants by name, checked: at least one, each named by a non-empty string."""
    if not agents:
        raise ValueError("no variants: pass agents as {name: agent, ...} (at least one)")
    out: dict[str, Any] = {}
    for name, agent in agents.items():
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"a variant's name must be a non-empty string, got {name!r}")
        if agent is None:
            raise TypeError(f"variant {name!r}: no agent (None)")
        out[name] = agent
    return out


VARIANT_IN_NAME = 64
"""The most bytes of a variant's name its store's file name holds: a longer name is cut
there and ended by a hash of the whole name (file names stop at 255 bytes)."""


def variant_store(store: str | Path | None, name: str) -> str | None:
    """The store of one variant: `out.jsonl` -> `out.NAME.jsonl` (NAME made safe for a file
    name: runs of other characters than letters, digits, `.`, `+`, `-`, `_` become `_`, and
    a name longer than VARIANT_IN_NAME bytes is cut, then ended by its hash)."""
    if not store:
        return None
    path = Path(store)
    safe = _UNSAFE.sub("_", name).strip("._") or "variant"
    if len(safe.encode()) > VARIANT_IN_NAME:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        cut = safe.encode()[: VARIANT_IN_NAME - 13].decode("utf-8", "ignore")
        safe = f"{cut}-{digest}"
    suffix = path.suffix or ".jsonl"
    return str(path.with_name(f"{path.stem if path.suffix else path.name}.{safe}{suffix}"))


def _stores(store: str | Path | None, names: list[str]) -> dict[str, str | None]:
    stores = {name: variant_store(store, name) for name in names}
    seen: dict[str | None, str] = {}
    for name, path in stores.items():
        if path is not None and path in seen:
            raise ValueError(
                f"variants {seen[path]!r} and {name!r} would share the store {path}: give them "
                "names that differ in letters or digits"
            )
        seen[path] = name
    return stores


class ExperimentRunner:
    """Runs every variant's runner at once on shared slots; `execute()` returns the
    Experiment (partial if stopped)."""

    def __init__(
        self,
        runners: dict[str, Runner],
        lanes: Lanes,
        name: str,
        listeners: list[ExperimentListener],
        settings: dict[str, Any],
    ) -> None:
        self.runners, self.lanes, self.listeners = runners, lanes, listeners
        self.id = uuid.uuid4().hex[:12]
        self.name = name or " vs ".join(runners)
        self.settings = settings
        self._warned: set[int] = set()
        self._main: asyncio.Task[Any] | None = None
        for variant, runner in runners.items():
            runner.listeners.append(self._relay(variant))

    def _relay(self, variant: str) -> Any:
        def relay(event: Event) -> None:
            self.emit(VariantEvent(variant, event))

        relay.__qualname__ = "convlab experiment listener"
        return relay

    def emit(self, event: ExperimentEvent) -> None:
        """Tell every listener, as a run does (convlab.engine.events.tell): a broken one never
        breaks the experiment; one that raises what is not an Exception stops every
        variant, keeping what finished."""
        main = self._main
        stop = None if main is None or isinstance(event, ExperimentFinished) else main.cancel
        tell(self.listeners, event, self._warned, stop)

    def finished(self) -> dict[str, list[CaseResult]]:
        """Each variant's instances finished so far."""
        return {name: list(r.finished()) for name, r in self.runners.items()}

    async def _lane(self, index: int, runner: Runner) -> Run:
        try:
            return await runner.execute()
        finally:  # a variant that ended early never holds the others up
            self.lanes.leave(index)

    async def execute(self) -> Experiment:
        """Run every variant; a stop (or an interrupt) stops them all, keeping what finished."""
        self._main = asyncio.current_task()
        first = next(iter(self.runners.values()))
        total = count(first.env.suite, first.settings.runs)
        agents = {name: r.env.agent.describe() for name, r in self.runners.items()}
        started = _now()
        self.emit(ExperimentStarted(self.id, self.name, agents, total, dict(self.settings)))
        tasks = [
            asyncio.ensure_future(self._lane(i, runner))
            for i, runner in enumerate(self.runners.values())
        ]
        pending: set[asyncio.Task[Run]] = set(tasks)
        while pending:
            try:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            except asyncio.CancelledError:  # stop every variant; each returns its partial Run
                _uncancel()
                for task in tasks:
                    task.cancel()
                continue
            if any(not t.cancelled() and t.exception() is not None for t in done):
                for task in pending:  # one variant could not run: stop the others
                    task.cancel()
        for task in tasks:
            if task.cancelled():
                raise asyncio.CancelledError
            error = task.exception()
            if error is not None:
                raise error
        runs = {name: task.result() for name, task in zip(self.runners, tasks, strict=True)}
        experiment = Experiment(
            runs,
            name=self.name,
            id=self.id,
            settings=self.settings,
            started_at=started,
            finished_at=_now(),
        )
        self.emit(ExperimentFinished(experiment))
        return experiment


def build_experiment(opts: dict[str, Any], listeners: list[ExperimentListener]) -> ExperimentRunner:
    """The experiment for run()/arun()/start()'s keyword arguments, `agent` being a mapping of
    variant names to agents; `experiment` names it."""
    agents = check_variants(opts["agent"])
    suite = load_suite(opts["suite"])
    stores = _stores(opts.get("store"), list(agents))
    _check_stores(stores, bool(opts.get("resume")), bool(opts.get("overwrite")))
    lanes = Lanes(int(opts["parallel"]), len(agents))
    runners: dict[str, Runner] = {}
    for index, (name, agent) in enumerate(agents.items()):
        runner = build_runner({**opts, "suite": suite, "agent": agent, "store": stores[name]}, [])
        runner.lanes, runner.lane = lanes, index
        runners[name] = runner
    first = next(iter(runners.values()))
    settings = {k: v for k, v in first.settings.public().items() if k != "store"}
    settings["stores"] = {k: v for k, v in stores.items() if v is not None}
    return ExperimentRunner(runners, lanes, opts.get("experiment") or "", listeners, settings)


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _check_stores(stores: dict[str, str | None], resume: bool, overwrite: bool) -> None:
    """Refuse before anything runs, as each variant's store would when it opens, when a
    variant's store exists and neither `resume` nor `overwrite` is given."""
    if resume or overwrite:
        return
    for path in stores.values():
        if path is not None and Path(path).exists() and Path(path).stat().st_size > 0:
            raise StoreError(
                f"{path} already exists: pass resume=True (CLI: --resume) to go on with the "
                "run it holds, or overwrite=True (--overwrite) to replace it"
            )
