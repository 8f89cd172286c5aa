"""The executor seam (`convlab.executors`): any object implementing the protocol runs a
suite, a string names one in the registry, and an executor that cannot start ends the run
`failed` with its one-line error, its store released, in every view.

No Ray here: the executors are small in-process ones defined in this file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.engine.events import CaseStarted, WorkersChanged
from convlab.engine.runner import Runner
from convlab.plan import Instance


def _suite(n: int) -> cl.Suite:
    cases = [cl.Case(id=f"c{i}", input=[cl.Message(content=f"hello {i}")]) for i in range(n)]
    return cl.Suite(id="s", name="s", cases=cases)


class Lanes:
    """Runs the plan here in `lanes` coroutines, telling the views it does."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        self.ran: list[str] = []

    async def execute(self, runner: Runner, todo: Iterator[tuple[int, Instance]]) -> None:
        runner.emit(WorkersChanged(self.lanes, "lanes in this process"))

        async def lane() -> None:
            for place, inst in todo:
                if not runner.picking:
                    return
                self.ran.append(inst.case.id)
                runner.accept(place, inst, await runner.run_instance(inst))

        await asyncio.gather(*(lane() for _ in range(self.lanes)))


class NoCluster:
    """An executor whose cluster never comes up."""

    async def execute(self, runner: Runner, todo: Iterator[tuple[int, Instance]]) -> None:
        raise cl.executors.ExecutorError(
            "the cluster did not start within 3 s; the machine may be busy"
        )


async def _echo(messages: list[dict[str, Any]]) -> str:
    await asyncio.sleep(0.001)
    return "ok " + messages[-1]["content"]


def test_an_executor_defined_here_runs_the_suite_as_the_local_engine_does() -> None:
    lanes = Lanes(3)
    seen: list[Any] = []
    run = cl.run(_suite(12), _echo, executor=lanes, progress=seen.append)
    here = cl.run(_suite(12), _echo, progress=False)
    assert sorted(lanes.ran) == sorted(f"c{i}" for i in range(12))
    assert [(r.case_id, r.status) for r in run.results] == [
        (r.case_id, r.status) for r in here.results
    ]
    assert [r.turns[0].observation.text for r in run.results] == [
        f"ok hello {i}" for i in range(12)
    ]
    assert any(isinstance(e, WorkersChanged) and e.workers == 3 for e in seen)
    assert sum(isinstance(e, CaseStarted) for e in seen) == 12


def test_a_name_in_the_registry_picks_an_executor() -> None:
    made: list[str] = []

    def make(argument: str) -> Lanes:
        made.append(argument)
        return Lanes(2)

    with cl.executors.EXECUTORS.registered("lanes", make):
        run = cl.run(_suite(4), _echo, executor="lanes:two please", progress=False)
    assert made == ["two please"] and run.summary["passed"] == 4
    assert {"local", "ray"} <= set(cl.executors.EXECUTORS.names())
    with pytest.raises(KeyError, match="lanes"):
        cl.run(_suite(1), _echo, executor="lanes", progress=False)


def test_what_is_no_executor_is_refused_before_the_run() -> None:
    with pytest.raises(TypeError, match="execute"):
        cl.run(_suite(1), _echo, executor=object(), progress=False)


def test_an_executor_that_cannot_start_fails_the_run_and_releases_its_store(
    tmp_path: Path,
) -> None:
    store = tmp_path / "run.jsonl"
    run = cl.run(_suite(3), _echo, executor=NoCluster(), store=store, progress=False)
    assert run.status == "failed"
    assert run.error == "the cluster did not start within 3 s; the machine may be busy"
    assert {(r.status, r.blame) for r in run.results} == {("error", "infrastructure")}
    again = cl.run(_suite(3), _echo, store=store, resume=True, progress=False)
    assert again.status == "completed" and again.summary["passed"] == 3


def test_a_failed_start_in_the_background_says_failed_and_shows_its_error() -> None:
    from convlab.notebook.progress import LiveTree

    tree = LiveTree()
    handle = cl.start(_suite(2), _echo, executor=NoCluster(), progress=tree)
    run = handle.wait(60)
    assert run.status == "failed" and repr(handle).startswith("<RunHandle failed")
    shown = tree._repr_mimebundle_()
    assert "the cluster did not start within 3 s" in shown["text/html"]
    assert "see the error below" not in shown["text/html"]


class _InProcess:
    """An actor handle for an object in this process: `handle.method.remote(...)` schedules
    the coroutine method (awaitable, like Ray's ObjectRef)."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._obj, name)

        class _Call:
            @staticmethod
            def remote(*args: Any) -> asyncio.Future[Any]:
                return asyncio.ensure_future(method(*args))

        return _Call()


def test_the_workers_of_a_run_share_one_adaptive_limit_per_endpoint() -> None:
    """Two workers' limits of one endpoint are one: a 429 seen by one cuts what the other
    may send, as a local run's single limit does."""
    from convlab.executors._limits import LimitsActor, RemoteLimit

    async def go() -> tuple[int | None, int]:
        actor = _InProcess(LimitsActor())
        one, two = RemoteLimit(actor, "r1", "/chat"), RemoteLimit(actor, "r1", "/chat")
        held = [await one.acquire() for _ in range(8)] + [await two.acquire() for _ in range(8)]
        one.release(held[0], overloaded=True)  # worker one's endpoint answered 429
        await asyncio.sleep(0.01)
        waiting = asyncio.ensure_future(two.acquire())  # worker two must now wait
        await asyncio.sleep(0.05)
        blocked = not waiting.done()
        summary = await actor.summary.remote("r1")
        for i, ticket in enumerate(held[1:], 1):
            (one if i < 8 else two).release(ticket, overloaded=False)
        await asyncio.wait_for(waiting, 5)  # a slot freed by either worker serves it
        assert blocked, "worker two sent on after worker one's 429"
        return summary["limit"], summary["overloads"]

    limit, overloads = asyncio.run(go())
    assert (limit, overloads) == (8, 1)  # 16 in flight over both workers, cut to half
