"""Where a run's instances run: in this process (the default), on a Ray cluster, or on any
executor a user plugs in.

`cl.run(suite, agent, executor="ray")` runs the same instances on the workers of a private
local Ray cluster; `executor=cl.executors.ray(address="auto", workers=8, per_worker=50)`
joins an existing one. Everything else stays as it is: the driver (the process that called
`run`) writes the results store and keeps the Run, the live tree fills from the workers'
events, resume goes by instance key, and Stop or an interrupt returns the partial Run. The
cluster and its workers are kept warm for the next run; `shutdown()` ends them. Ray is an
optional extra: `pip install 'convlab[ray]'`.

The seam is open: any object implementing `Executor` (an `execute(runner, todo)` coroutine
method) or `ExecutorFactory` (`bind(runner)`, `describe()`) is accepted as `executor=`, and
`EXECUTORS` names them for strings: `EXECUTORS.add("dask", make)` makes
`executor="dask:tcp://scheduler:8786"` call `make("tcp://scheduler:8786")`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convlab.engine.executor import Executor, ExecutorFactory
from convlab.errors import ExecutorError
from convlab.executors._ray import RayExecutor
from convlab.registry import Registry

if TYPE_CHECKING:
    from convlab.engine.runner import Runner

__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorError",
    "ExecutorFactory",
    "RayExecutor",
    "bind",
    "bind_each",
    "local",
    "ray",
    "shutdown",
]


class _Local:
    """The default executor: every instance in this process, `parallel` at a time."""

    def __repr__(self) -> str:
        return "convlab.executors.local"

    def describe(self) -> str:
        """`local`: where runs go."""
        return "local"


local = _Local()
"""The local engine (what `executor=None` means)."""


def ray(
    address: str | None = None,
    workers: int | None = None,
    per_worker: int | None = None,
    **options: Any,
) -> RayExecutor:
    """Run on Ray: `address` None or "local" starts a private cluster on this machine (kept
    for the next runs, ended by `shutdown()` or at exit), "auto" joins the cluster this
    machine belongs to, "HOST:PORT" or "ray://HOST:PORT" that one. `workers` defaults to
    one per CPU of the cluster, `per_worker` to the run's `parallel` split over them. More
    options (`start_timeout`, `idle_timeout`, ...): RayExecutor.

    Example:
        >>> import convlab as cl
        >>> cl.executors.ray(workers=2, per_worker=100).describe()
        'ray (local)'
    """
    return RayExecutor(address=address, workers=workers, per_worker=per_worker, **options)


EXECUTORS: Registry[Callable[[str], Any]] = Registry("executor")
"""Executors by the name a string gives (`"NAME"` or `"NAME:ARGUMENT"`): each entry makes
the executor from the text after the colon ("" when there is none)."""
EXECUTORS.add("local", lambda rest: local)
EXECUTORS.add(
    "ray", lambda rest: RayExecutor(address=("ray:" + rest if rest[:2] == "//" else rest) or None)
)


def bind(executor: Any, runner: Runner) -> Executor | None:
    """The executor `run(executor=...)` names, ready for `runner` (None: the local engine).

    A string names one in `EXECUTORS` ("ray" is a private local Ray cluster, "ray:ADDRESS"
    the cluster at ADDRESS: "ray:auto", "ray://head:10001"). An `ExecutorFactory` is bound
    to the run here (Ray pickles what the workers need, so an agent that cannot travel is
    refused with an `ExecutorError` before anything starts); an `Executor` is used as it is.
    """
    if isinstance(executor, str):
        name, _, rest = executor.partition(":")
        executor = EXECUTORS.get(name)(rest)
    if executor is None or executor is local:
        return None
    if isinstance(executor, ExecutorFactory):
        return executor.bind(runner)
    if isinstance(executor, Executor):
        return executor
    raise TypeError(
        f"executor={executor!r}: use None or 'local', 'ray', 'ray:ADDRESS', one of "
        f"{EXECUTORS.names()}, cl.executors.ray(), or an object with an async "
        "execute(runner, todo) method (convlab.executors.Executor)"
    )


def bind_each(executor: Any, runners: list[Runner]) -> list[Executor | None]:
    """The executor `run(executor=...)` names, for runs going on at once (an experiment's
    variants). An executor with a `bind_each(runners)` method binds them together (on Ray
    they share the cluster and its workers, each on its share, the driver writing for all);
    any other is bound to each run on its own."""
    if isinstance(executor, str):
        name, _, rest = executor.partition(":")
        executor = EXECUTORS.get(name)(rest)
    if executor is None or executor is local:
        return [None] * len(runners)
    together = getattr(executor, "bind_each", None)
    if callable(together):
        bound: list[Executor | None] = list(together(runners))
        return bound
    return [bind(executor, runner) for runner in runners]


def shutdown() -> bool:
    """End the warm Ray workers and the Ray connection convlab made (a local cluster it
    started stops); whether there was one. A connection made by your own `ray.init()` is
    left open. The next Ray run starts again."""
    import sys

    if "ray" not in sys.modules:
        return False
    from convlab.executors._cluster import disconnect
    from convlab.executors._warm import POOL

    POOL.end(sys.modules["ray"])
    return disconnect()
