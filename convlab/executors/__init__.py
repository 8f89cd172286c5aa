"""Where a run's instances run: in this process (the default) or on a Ray cluster.

`cl.run(suite, agent, executor="ray")` runs the same instances on the workers of a private
local Ray cluster; `executor=cl.executors.ray(address="auto", workers=8, per_worker=50)`
joins an existing one. Everything else stays as it is: the driver (the process that called
`run`) writes the results store and keeps the Run, the live tree fills from the workers'
events, resume goes by instance key, and Stop or an interrupt returns the partial Run.
Ray is an optional extra: `pip install 'convlab[ray]'`.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from convlab.errors import ExecutorError
from convlab.executors._ray import RayExecutor

if TYPE_CHECKING:
    from convlab.engine.runner import Runner
    from convlab.engine.shard import Executor

__all__ = ["ExecutorError", "RayExecutor", "bind", "bind_each", "local", "ray"]


class _Local:
    """The default executor: every instance in this process, `parallel` at a time."""

    def __repr__(self) -> str:
        return "convlab.executors.local"


local = _Local()
"""The local engine (what `executor=None` means)."""


def ray(
    address: str | None = None,
    workers: int | None = None,
    per_worker: int | None = None,
    **options: Any,
) -> RayExecutor:
    """Run on Ray: `address` None or "local" starts a private cluster on this machine (shut
    down after the run), "auto" joins the cluster this machine belongs to, "HOST:PORT" or
    "ray://HOST:PORT" that one. `workers` defaults to one per CPU of the cluster,
    `per_worker` to the run's `parallel` split over them. More options: RayExecutor.

    Example:
        >>> import convlab as cl
        >>> cl.executors.ray(workers=2, per_worker=100).describe()
        'ray (local)'
    """
    return RayExecutor(address=address, workers=workers, per_worker=per_worker, **options)


def bind(executor: Any, runner: Runner) -> Executor | None:
    """The executor `run(executor=...)` names, ready for `runner` (None: the local engine).

    "ray" is a private local Ray cluster, "ray:ADDRESS" the cluster at ADDRESS ("ray:auto",
    "ray://head:10001"). Whatever the workers would need is pickled here, so an agent that
    cannot travel is refused (`ExecutorError`) before anything starts.
    """
    if executor is None or executor is local or executor == "local":
        return None
    if isinstance(executor, str):
        executor = _parse(executor)
    if isinstance(executor, RayExecutor):
        return executor.bind(runner)
    raise TypeError(
        f"executor={executor!r}: use None or 'local', 'ray', 'ray:ADDRESS' or cl.executors.ray()"
    )


def bind_each(executor: Any, runners: list[Runner]) -> list[Executor | None]:
    """The executor `run(executor=...)` names, for runs going on at once (an experiment's
    variants): on Ray they share one cluster and its workers, the driver writing for all."""
    if executor is None or executor is local or executor == "local":
        return [None] * len(runners)
    if isinstance(executor, str):
        executor = _parse(executor)
    if isinstance(executor, RayExecutor):
        return list(executor.bind_each(runners))
    raise TypeError(
        f"executor={executor!r}: use None or 'local', 'ray', 'ray:ADDRESS' or cl.executors.ray()"
    )


def _parse(spec: str) -> RayExecutor:
    if spec == "ray":
        return RayExecutor()
    if spec.startswith("ray://"):
        return RayExecutor(address=spec)
    if spec.startswith("ray:") and spec[4:]:
        return RayExecutor(address=spec[4:])
    close = difflib.get_close_matches(spec, ["local", "ray", "ray:auto"], n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(
        f"executor={spec!r}: use 'local', 'ray' (a local Ray cluster), 'ray:auto' or "
        f"'ray:HOST:PORT' (an existing one).{hint}"
    )
