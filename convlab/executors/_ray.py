"""The Ray executor: a run's instances on the workers of a Ray cluster, the driver writing.

`RayExecutor` is what a user configures (`cl.executors.ray(address=..., workers=...,
per_worker=...)`, or `executor="ray"`). For one run, `bind` pickles everything the workers
need (refusing, before anything starts, what cannot travel) and gives the `Executor` the
Runner calls. That one starts a private local cluster or joins the one at `address`,
starts `workers` async actors with `per_worker` instances in flight each (by default
`parallel` split over them), checks that they run the driver's convlab, and lets the
Dispatcher hand the plan out in shards. A cluster convlab started is shut down when the run
ends; one it joined is left running. The actors end with the run.

A local cluster is started with no dashboard, token authentication on (Ray's default), its
usage statistics off, and the workers' own output off the driver's terminal: what they
log or print comes back as events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from convlab.engine.runner import Runner
from convlab.engine.shard import Wire
from convlab.errors import ExecutorError, MissingDependencyError
from convlab.executors._dispatch import OUTSTANDING, Dispatcher
from convlab.executors._ship import driver_version, payload
from convlab.plan import Instance, count

__all__ = ["RayExecutor", "actor_name", "import_ray"]

LOCAL = "local"


def import_ray() -> Any:
    """The `ray` module, or a MissingDependencyError naming `pip install 'convlab[ray]'`."""
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("executor='ray'", "ray") from None
    return ray


@dataclass(frozen=True)
class RayExecutor:
    """Where and how wide a run goes on Ray (see the module docstring).

    Args:
        address: None or "local": a private cluster on this machine, shut down at the end
            of the run. "auto": the cluster this machine belongs to; "HOST:PORT" or
            "ray://HOST:PORT" (Ray Client): that cluster. A process already connected to
            Ray (`ray.init()` called) uses that connection whatever the address.
        workers: Worker processes (actors); None: one per CPU of the cluster.
        per_worker: Instances in flight on each worker; None: `parallel` split over the
            workers (rounded up), so `parallel` stays the run's total.
        num_cpus: CPUs each worker reserves in the cluster.
        runtime_env: Ray's runtime environment for the workers (e.g. `{"pip":
            ["convlab==X.Y"]}` on a cluster that lacks it).
        attempts: Times an instance is handed out before it is an error (a worker died).
        window: Seconds a worker collects events before sending a batch.
        init: More keyword arguments for `ray.init`.
    """

    address: str | None = None
    workers: int | None = None
    per_worker: int | None = None
    num_cpus: float = 1.0
    runtime_env: dict[str, Any] | None = None
    attempts: int = 3
    window: float = 0.02
    init: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("workers", "per_worker"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
                raise ValueError(f"{name}={value!r}: use a positive integer or None")
        if self.attempts < 1:
            raise ValueError(f"attempts={self.attempts!r}: use 1 or more")

    def bind(self, runner: Runner) -> _RayRun:
        """This executor for one run: the run pickled and checked (nothing starts yet)."""
        import_ray()
        return _RayRun(self, payload(runner))

    def bind_each(self, runners: list[Runner]) -> list[_RayRun]:
        """This executor for runs going on at once (an experiment's variants): one cluster
        for them all (joined or started by the first, shut down after the last when convlab
        started it), each run on its share of the workers, `parallel` split over them all."""
        import_ray()
        cluster = _Cluster()
        return [
            _RayRun(self, payload(r), cluster=cluster, share=(i, len(runners)))
            for i, r in enumerate(runners)
        ]

    def describe(self) -> str:
        """`ray (local)`, `ray (auto)`, ...: where the run goes, as settings record it."""
        return f"ray ({self.address or LOCAL})"


@dataclass
class _Cluster:
    """The cluster of runs bound together: the first to start joins it (or starts it), and
    the last to end shuts it down when convlab started it."""

    users: int = 0
    started: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def join(self, run: _RayRun, ray: Any) -> None:
        async with self.lock:
            if self.users == 0:
                connecting = asyncio.ensure_future(asyncio.to_thread(run._connect, ray))
                try:
                    self.started = await asyncio.shield(connecting)
                except asyncio.CancelledError:
                    if await connecting:
                        await asyncio.to_thread(ray.shutdown)
                    raise
            self.users += 1

    async def leave(self, ray: Any) -> None:
        self.users -= 1
        if self.users == 0 and self.started:
            self.started = False
            await asyncio.shield(asyncio.to_thread(ray.shutdown))


@dataclass
class _RayRun:
    """One run on Ray (the Runner's `executor`)."""

    config: RayExecutor
    data: bytes
    actors: list[Any] = field(default_factory=list)
    cluster: _Cluster = field(default_factory=_Cluster)
    share: tuple[int, int] = (0, 1)
    """This run's place among the runs sharing the cluster, and how many there are."""

    async def execute(self, runner: Runner, todo: Iterator[tuple[int, Instance]]) -> None:
        """Connect, start the workers, run the plan, end the workers (and a cluster of our own)."""
        ray = import_ray()
        await self.cluster.join(self, ray)
        try:
            await self._run(ray, runner, todo)
        finally:
            for actor in self.actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)
            await self.cluster.leave(ray)

    def _connect(self, ray: Any) -> bool:
        """Join or start the cluster; whether this run started it (and so shuts it down)."""
        if ray.is_initialized():
            return False
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        address = self.config.address or LOCAL
        options: dict[str, Any] = {
            "address": address,
            "log_to_driver": False,  # the workers' output comes back as events
            # not "token authentication is enabled" (the README says so) in every cell
            "logging_level": logging.ERROR,
            "namespace": "convlab",
        }
        if address == LOCAL:
            options |= {"include_dashboard": False, "num_cpus": os.cpu_count() or 1}
        options |= self.config.init
        try:
            ray.init(**options)
        except Exception as exc:
            raise ExecutorError(f"could not reach Ray at {address!r}: {exc}") from exc
        return True

    async def _run(self, ray: Any, runner: Runner, todo: Iterator[tuple[int, Instance]]) -> None:
        cfg = self.config
        wide = cfg.workers or max(1, int(ray.cluster_resources().get("CPU", 1) // cfg.num_cpus))
        index, runs = self.share  # runs sharing the cluster split its workers and `parallel`
        n = max(1, wide // runs + (1 if index < wide % runs else 0))
        shared = max(wide, runs)
        per = cfg.per_worker or max(1, math.ceil(runner.settings.parallel / shared))
        num_cpus = cfg.num_cpus * wide / shared  # more runs than workers: each reserves less
        ref = ray.put(self.data)
        actor_class = ray.remote(_actor_class())
        listening = bool(runner.listeners)

        async def spawn(number: int) -> _Worker:
            name = f"w{number}"
            actor = actor_class.options(
                name=actor_name(runner.run.id, name),
                num_cpus=num_cpus,
                max_concurrency=64,
                runtime_env=cfg.runtime_env,
                scheduling_strategy="SPREAD",
            ).remote(name)
            self.actors.append(actor)
            setup = actor.setup.remote(ref, runner.run.id, per, listening, cfg.window)
            try:
                info = await setup
            except Exception as exc:
                raise ExecutorError(
                    f"Ray worker {name} could not start: {_short(exc)} (the workers need "
                    f"convlab {driver_version()} and the run's own modules importable; pass "
                    "runtime_env= to install them)"
                ) from None
            if info["version"] != driver_version():
                raise ExecutorError(
                    f"Ray worker {name} (pid {info['pid']} on {info['host']}) runs convlab "
                    f"{info['version']}, this process convlab {driver_version()}: install the "
                    f"same version on the workers (e.g. runtime_env={{'pip': "
                    f"['convlab=={driver_version()}']}})"
                )
            return _Worker(name, actor, info, ray)

        started = await asyncio.gather(*(spawn(i + 1) for i in range(n)), return_exceptions=True)
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome
        workers: list[_Worker] = list(started)  # type: ignore[arg-type]
        total = count(runner.env.suite, runner.settings.runs)
        chunk = max(1, min(per, math.ceil(total / (OUTSTANDING * n))))
        where = f"{cfg.address or LOCAL} Ray cluster, {per} in flight each"
        runner.run.settings["executor"] = {"kind": "ray", "workers": n, "per_worker": per}
        await Dispatcher(
            runner,
            todo,
            list(workers),
            chunk,
            where=where,
            attempts=cfg.attempts,
            spawn=spawn,
        ).run()


@dataclass
class _Worker:
    """One actor as the Dispatcher drives it."""

    name: str
    actor: Any
    info: dict[str, Any]
    ray: Any

    async def stream(self, places: list[int]) -> AsyncIterator[list[Wire]]:
        """The actor's batches for `places`; closing this cancels the call there."""
        calls = self.actor.stream.remote(places)
        finished = False
        try:
            async for ref in calls:
                yield await ref
            finished = True
        finally:
            if not finished:
                with contextlib.suppress(Exception):
                    self.ray.cancel(calls)

    def stop(self) -> None:
        """Ask the actor to stop its shards (fire and forget)."""
        with contextlib.suppress(Exception):
            self.actor.stop.remote()

    def drain(self) -> None:
        """Ask the actor to start no new instance (fire and forget)."""
        with contextlib.suppress(Exception):
            self.actor.drain.remote()

    def is_gone(self, exc: BaseException) -> bool:
        """Whether the actor died (or can no longer be reached)."""
        return isinstance(exc, self.ray.exceptions.RayActorError)


def actor_name(run_id: str, worker: str) -> str:
    """The Ray name of a run's worker actor (`ray.get_actor(actor_name(run.id, "w1"))`)."""
    return f"convlab-{run_id}-{worker}"


def _actor_class() -> type:
    from convlab.executors._actor import ShardActor

    return ShardActor


def _short(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    tail = lines[-1] if lines else ""
    return f"{type(exc).__name__}: {tail}"[:500]
