"""The Ray executor: a run's instances on the workers of a Ray cluster, the driver writing.

`RayExecutor` is what a user configures (`cl.executors.ray(address=..., workers=...,
per_worker=...)`, or `executor="ray"`). For one run, `bind` pickles everything the workers
need (refusing, before anything starts, what cannot travel) and gives the `Executor` the
Runner calls. That one starts a private local cluster or joins the one at `address` (once
per process: `_cluster`), takes `workers` warm shard workers (`_warm`; started on first
use) with `per_worker` instances in flight each (by default `parallel` split over them),
checks that they run the driver's convlab, and lets the Dispatcher hand the plan out in
shards. The cluster and the workers stay for the next run; `cl.executors.shutdown()` ends
them, and so does the end of the process.

A local cluster is started with no dashboard, token authentication on (Ray's default), its
usage statistics off, and the workers' own output off the driver's terminal: what they
log or print comes back as events.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from convlab.engine.events import WorkersChanged
from convlab.engine.runner import Runner
from convlab.engine.shard import Wire
from convlab.errors import ExecutorError, MissingDependencyError
from convlab.executors._cluster import JOIN_TIMEOUT, LOCAL, START_TIMEOUT, connect, connected
from convlab.executors._dispatch import OUTSTANDING, Dispatcher
from convlab.executors._ship import adaptive, driver_version, payload
from convlab.executors._warm import POOL, pool_key
from convlab.plan import Instance, count

__all__ = ["IDLE_TIMEOUT", "RayExecutor", "import_ray", "worker_actor"]

IDLE_TIMEOUT = 600.0
"""Seconds warm workers nobody uses are kept before they are ended."""

_RUN_WORKERS: dict[tuple[str, str], Any] = {}
"""The actor behind each worker of each run going on: (run id, worker name) -> handle."""


def import_ray(local: bool = False) -> Any:
    """The `ray` module, or a MissingDependencyError naming `pip install 'convlab[ray]'`.

    Imported first for a `local` cluster, Ray is told this machine is no cluster node
    (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read when Ray is imported): the cluster's node
    address is then 127.0.0.1, not the machine's network address, and its agents listen
    on loopback (Ray's GCS and raylet listen on every interface whatever convlab asks).
    Such a process cannot join a remote cluster later (restart it first)."""
    if local and "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("executor='ray'", "ray") from None
    return ray


_STARTER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="convlab-ray-start")
"""The one thread that starts or joins a cluster, kept for the life of the process. Ray ties
the processes of a cluster it starts to the thread that started them (the Linux parent-death
signal): started from a thread that ends (asyncio.to_thread's, or the worker thread of a
run in a notebook), the GCS and the raylet are killed with it and the next run finds no
cluster. Off the event loop, so a start taking seconds never blocks a cell's loop."""


@dataclass(frozen=True)
class RayExecutor:
    """Where and how wide a run goes on Ray (see the module docstring).

    Args:
        address: None or "local": a private cluster on this machine, started by the first
            run and kept until `cl.executors.shutdown()` or the end of the process. "auto":
            the cluster this machine belongs to; "HOST:PORT" or "ray://HOST:PORT" (Ray
            Client): that cluster. A process already connected to Ray (`ray.init()`
            called) uses that connection whatever the address.
        workers: Worker processes (actors); None: one per CPU of the cluster.
        per_worker: Instances in flight on each worker; None: `parallel` split over the
            workers (rounded up), so `parallel` stays the run's total.
        num_cpus: CPUs each worker reserves in the cluster.
        runtime_env: Ray's runtime environment for the workers (e.g. `{"pip":
            ["convlab==X.Y"]}` on a cluster that lacks it).
        attempts: Times an instance is handed out before it is an error (a worker died).
        window: Seconds a worker collects events before sending a batch.
        start_timeout: Seconds a local cluster gets to start (on a busy machine Ray's
            start is slow; convlab tries again until then); None: 180. Joining an address
            fails within seconds when nothing answers there.
        idle_timeout: Seconds the warm workers are kept when no run uses them.
        init: More keyword arguments for `ray.init`.
    """

    address: str | None = None
    workers: int | None = None
    per_worker: int | None = None
    num_cpus: float = 1.0
    runtime_env: dict[str, Any] | None = None
    attempts: int = 3
    window: float = 0.02
    start_timeout: float | None = None
    idle_timeout: float = IDLE_TIMEOUT
    init: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("workers", "per_worker"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
                raise ValueError(f"{name}={value!r}: use a positive integer or None")
        if self.attempts < 1:
            raise ValueError(f"attempts={self.attempts!r}: use 1 or more")
        for name in ("start_timeout", "idle_timeout"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name}={value!r}: use a number of seconds above 0")

    def bind(self, runner: Runner) -> _RayRun:
        """This executor for one run: the run pickled and checked (nothing starts yet)."""
        import_ray(local=(self.address or LOCAL) == LOCAL)
        return _RayRun(self, payload(runner), adaptive(runner))

    def bind_each(self, runners: list[Runner]) -> list[_RayRun]:
        """This executor for runs going on at once (an experiment's variants): one cluster
        for them all (this process's, kept warm), each run on its share of the warm
        workers, `parallel` split over them all."""
        local = (self.address or LOCAL) == LOCAL
        import_ray(local=local)
        return [
            _RayRun(self, payload(r), adaptive(r), share=(i, len(runners)))
            for i, r in enumerate(runners)
        ]

    def describe(self) -> str:
        """`ray (local)`, `ray (auto)`, ...: where the run goes, as settings record it."""
        return f"ray ({self.address or LOCAL})"


@dataclass
class _RayRun:
    """One run on Ray (the Runner's `executor`)."""

    config: RayExecutor
    data: bytes
    adaptive: bool = False
    """Whether the run's workers share adaptive limits (it calls an HTTP endpoint)."""
    share: tuple[int, int] = (0, 1)
    """This run's place among the runs bound together (an experiment's variants), and how
    many there are: they split the workers and `parallel`."""

    async def execute(self, runner: Runner, todo: Iterator[tuple[int, Instance]]) -> None:
        """Connect (or reuse the connection), take warm workers, run the plan."""
        ray = import_ray()
        cfg = self.config
        address = cfg.address or LOCAL
        known = connected(address)
        if known is None and runner.listeners:  # a start takes seconds: say so, with a clock
            doing = (
                "starting a local Ray cluster…"
                if address == LOCAL
                else (f"joining the Ray cluster at {address}…")
            )
            runner.emit(WorkersChanged(0, doing, since=time.monotonic()))
        timeout = cfg.start_timeout or (START_TIMEOUT if address == LOCAL else JOIN_TIMEOUT)
        # a thread of its own: an interrupted cell leaves the start to finish, for the next run
        loop = asyncio.get_running_loop()
        conn, reused = await loop.run_in_executor(_STARTER, connect, address, cfg.init, timeout)
        how = "reused" if reused else f"started in {conn.took:.0f} s" if conn.started else "joined"
        try:
            await self._run(ray, runner, todo, conn, f"{conn.where}, {how}")
        finally:
            for worker in [k for k in _RUN_WORKERS if k[0] == runner.run.id]:
                with contextlib.suppress(Exception):
                    _RUN_WORKERS.pop(worker).finish.remote(runner.run.id)
            POOL.give_back(ray, cfg.idle_timeout)

    async def _run(
        self,
        ray: Any,
        runner: Runner,
        todo: Iterator[tuple[int, Instance]],
        conn: Any,
        where: str,
    ) -> None:
        cfg = self.config
        wide = cfg.workers or max(1, int(ray.cluster_resources().get("CPU", 1) // cfg.num_cpus))
        index, runs = self.share  # runs bound together split the workers and `parallel`
        n = max(1, wide // runs + (1 if index < wide % runs else 0))
        first = (index * wide // runs) % wide if runs > 1 else 0  # this run's first worker
        per = cfg.per_worker or max(1, math.ceil(runner.settings.parallel / max(wide, runs)))
        run_id = runner.run.id
        ref = ray.put(self.data)
        actor_class = _remote_class(ray)

        def make(number: int) -> Any:
            return actor_class.options(
                num_cpus=cfg.num_cpus,
                max_concurrency=256,
                runtime_env=cfg.runtime_env,
                scheduling_strategy="SPREAD",
            ).remote(f"convlab-{number}")

        key = pool_key(conn, cfg.num_cpus, cfg.runtime_env)
        actors, warm = POOL.take(ray, key, n, make, first=first, wide=wide)
        listening = bool(runner.listeners)
        limits = POOL.limiter(lambda: _remote_limits(ray).remote()) if self.adaptive else None

        async def ready(name: str, actor: Any) -> _Worker:
            _RUN_WORKERS[(run_id, name)] = actor
            setup = actor.setup.remote(ref, run_id, per, listening, cfg.window, limits)
            try:
                info = await setup
            except Exception as exc:
                POOL.discard(actor, ray)
                raise ExecutorError(
                    f"Ray worker {name} could not start: {_short(exc)} (the workers need "
                    f"convlab {driver_version()} and the run's own modules importable; pass "
                    "runtime_env= to install them)"
                ) from None
            if info["version"] != driver_version():
                POOL.discard(actor, ray)
                raise ExecutorError(
                    f"Ray worker {name} (pid {info['pid']} on {info['host']}) runs convlab "
                    f"{info['version']}, this process convlab {driver_version()}: install the "
                    f"same version on the workers (e.g. runtime_env={{'pip': "
                    f"['convlab=={driver_version()}']}})"
                )
            return _Worker(name, actor, info, ray, run_id)

        async def spawn(number: int) -> _Worker:
            return await ready(f"w{number}", POOL.add(ray, make))

        started = await asyncio.gather(
            *(ready(f"w{i + 1}", a) for i, a in enumerate(actors)), return_exceptions=True
        )
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome
        workers: list[_Worker] = list(started)  # type: ignore[arg-type]
        total = count(runner.env.suite, runner.settings.runs)
        chunk = max(1, min(per, math.ceil(total / (OUTSTANDING * n))))
        warmth = "" if warm == n else f", {n - warm} new" if warm else ""
        runner.run.settings["executor"] = {"kind": "ray", "workers": n, "per_worker": per}
        try:
            await Dispatcher(
                runner,
                todo,
                list(workers),
                chunk,
                where=f"{where}{warmth}, {per} in flight each",
                attempts=cfg.attempts,
                spawn=spawn,
            ).run()
        finally:
            if limits is not None:  # what the shared limits did, as a local run records it
                await asyncio.shield(self._transport(runner, limits))

    async def _transport(self, runner: Runner, limits: Any) -> None:
        with contextlib.suppress(Exception):
            summary = await limits.summary.remote(runner.run.id)
            if summary is not None:
                runner.run.settings["transport"] = summary
        with contextlib.suppress(Exception):
            limits.forget.remote(runner.run.id)


@dataclass
class _Worker:
    """One actor as the Dispatcher drives it, for one run."""

    name: str
    actor: Any
    info: dict[str, Any]
    ray: Any
    run_id: str

    async def stream(self, places: list[int]) -> AsyncIterator[list[Wire]]:
        """The actor's batches for `places`; closing this cancels the call there."""
        calls = self.actor.stream.remote(self.run_id, places)
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
        """Ask the actor to stop the run's shards (fire and forget)."""
        with contextlib.suppress(Exception):
            self.actor.stop.remote(self.run_id)

    def drain(self) -> None:
        """Ask the actor to start no new instance of the run (fire and forget)."""
        with contextlib.suppress(Exception):
            self.actor.drain.remote(self.run_id)

    def is_gone(self, exc: BaseException) -> bool:
        """Whether the actor died (or can no longer be reached): it is not kept warm."""
        gone = isinstance(exc, self.ray.exceptions.RayActorError)
        if gone:
            POOL.discard(self.actor)
        return gone


def worker_actor(run_id: str, worker: str) -> Any:
    """The Ray actor running worker `worker` ("w1") of the run `run_id`, while it runs."""
    return _RUN_WORKERS[(run_id, worker)]


@functools.cache
def _remote_class(ray: Any) -> Any:
    """The shard worker as a Ray actor class (made once: Ray sends its code once)."""
    from convlab.executors._actor import ShardActor

    return ray.remote(ShardActor)


@functools.cache
def _remote_limits(ray: Any) -> Any:
    """The shared adaptive limits as a Ray actor class: no CPU reserved, many waiters."""
    from convlab.executors._limits import LimitsActor

    return ray.remote(LimitsActor).options(num_cpus=0, max_concurrency=100_000)


def _short(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    tail = lines[-1] if lines else ""
    return f"{type(exc).__name__}: {tail}"[:500]
