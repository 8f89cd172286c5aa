"""The executor protocol: where a run's planned instances run, if not here.

A Runner plans a run (the suite expanded into instances, each with its place in the plan),
keeps the results store, the Run and the event stream; an executor only runs instances. Any
object with the method below is one, so a user (or a later Dask executor) plugs one in with
`cl.run(..., executor=obj)` without editing convlab; `convlab.executors.EXECUTORS` names
them for strings (`executor="ray:auto"`).

What an executor may use of the Runner (nothing else):

- `runner.run_instance(inst)`: run one instance here, to its CaseResult (never raises but
  CancelledError);
- `runner.accept(place, inst, result)`: keep a finished instance (stored, shown, counted);
  call it on the run's event loop, once per place (a second result is dropped);
- `runner.unfinished(place, inst, why)`: keep one stopped before or while it ran;
- `runner.emit(event)`: tell the views something (`WorkersChanged`, `WorkerLog`, ...);
- `runner.picking`: False once no new instance may start (`fail_fast` after a failure);
- `runner.settings` (`parallel`, `runs`, ...), `runner.env` (the agent, the suite) and
  `runner.run.id`, read only.

Example, an executor that runs the plan here, two instances at a time:

    class Two:
        async def execute(self, runner, todo):
            async def lane():
                for place, inst in todo:
                    if not runner.picking:
                        return
                    runner.accept(place, inst, await runner.run_instance(inst))
            await asyncio.gather(lane(), lane())

    cl.run(suite, agent, executor=Two())
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from convlab.plan import Instance

if TYPE_CHECKING:
    from convlab.engine.runner import Runner

__all__ = ["Executor", "ExecutorFactory"]


@runtime_checkable
class Executor(Protocol):
    """Runs a run's planned instances (see the module docstring)."""

    async def execute(self, runner: Runner, todo: Iterator[tuple[int, Instance]]) -> None:
        """Run `todo` (instances with their places in the plan; pull them as you go, the
        plan is built lazily) to the end, handing each result to `runner.accept`.

        Cancelled (Stop, an interrupt): keep what stopped mid-way with `runner.unfinished`
        and raise CancelledError. Unable to start at all (no cluster, no worker): raise
        `convlab.errors.ExecutorError` with one line saying what happened and what to do;
        the run then ends `failed` with that message, its store closed, and each instance
        not run an `error` blamed on the infrastructure."""


@runtime_checkable
class ExecutorFactory(Protocol):
    """What a user configures once and passes to many runs (`cl.executors.ray(...)`):
    `bind` makes the Executor of one run (pickling what its workers need, refusing what
    cannot travel) before the run starts."""

    def bind(self, runner: Runner) -> Executor:
        """The executor for the run `runner` is about to make (nothing starts yet)."""

    def describe(self) -> str:
        """Where runs go, in a few words ("ray (local)")."""
