"""A Run lists its results in plan order (run by run, case by case), whatever order they
finished in: after a resume, a stop, or cases that take different times."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import convlab as cl
from convlab.plan import expand


def _suite(n: int = 12) -> cl.Suite:
    return cl.Suite(
        id="order",
        cases=[
            cl.Case(
                id=f"c{i}",
                input=[cl.Message(content=str(i))],
                assertions=[{"kind": "contains", "value": "ok"}],
            )
            for i in range(n)
        ],
    )


async def _slow_first(messages: list[dict[str, str]]) -> str:
    """Earlier cases answer later: they finish in the reverse of plan order."""
    await asyncio.sleep(0.002 * (12 - int(messages[-1]["content"])))
    return "ok"


def _plan(suite: cl.Suite, runs: int) -> list[tuple[str, int]]:
    return [(i.case.id, i.run) for i in expand(suite, runs)]


def _order(run: cl.Run) -> list[tuple[str, int]]:
    return [(r.case_id, r.run) for r in run.results]


def test_results_are_in_plan_order_not_in_finishing_order() -> None:
    suite = _suite()
    run = cl.run(suite, _slow_first, runs=2, parallel=12, progress=False)
    assert _order(run) == _plan(suite, 2)


def test_a_resumed_run_lists_stored_and_new_results_in_plan_order(tmp_path: Path) -> None:
    suite, store = _suite(), tmp_path / "s.jsonl"
    first = cl.run(suite, _slow_first, runs=1, parallel=12, store=str(store), progress=False)
    assert _order(first) == _plan(suite, 1)
    resumed = cl.run(
        suite, _slow_first, runs=3, parallel=5, store=str(store), resume=True, progress=False
    )
    assert _order(resumed) == _plan(suite, 3)
    assert all(r.status == "passed" for r in resumed.results)
    # fewer runs than the store holds: the stored results outside the plan come last, as
    # they were stored
    fewer = cl.run(suite, _slow_first, runs=2, store=str(store), resume=True, progress=False)
    assert _order(fewer)[:24] == _plan(suite, 2)
    assert sorted(_order(fewer)[24:]) == sorted((c, 2) for c, _ in _plan(suite, 1))


def test_a_stopped_run_lists_every_planned_instance_in_plan_order() -> None:
    suite, answered, enough = _suite(), [0], threading.Event()

    async def agent(messages: list[dict[str, str]]) -> str:
        reply = await _slow_first(messages)
        answered[0] += 1
        if answered[0] == 4:
            enough.set()
        return reply

    handle = cl.start(suite, agent, runs=2, parallel=3, progress=False)
    assert enough.wait(30), "four cases never finished"
    run = handle.stop()
    assert _order(run) == _plan(suite, 2)
    statuses = {r.status for r in run.results}
    assert "passed" in statuses and "cancelled" in statuses
