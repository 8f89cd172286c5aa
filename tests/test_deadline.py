"""One timer watches a worker's cases (engine/_deadline.py): each case still times out at its
own deadline, never at an earlier case's, and a stop of the run stays a cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

import convlab as cl
from convlab.engine._deadline import Deadline
from convlab.model import Case, Message, Suite


def _watch() -> Deadline:
    task = asyncio.current_task()
    assert task is not None
    return Deadline(task)


async def _case(watch: Deadline, budget: float, takes: float) -> str:
    loop = asyncio.get_running_loop()
    try:
        with watch.at(loop.time() + budget):
            await asyncio.sleep(takes)
    except TimeoutError:
        return "timeout"
    return "done"


def test_each_case_has_its_own_deadline() -> None:
    async def main() -> list[str]:
        watch = _watch()
        # five cases of 30 ms under 50 ms each: 150 ms in all, none times out (the timer
        # armed for the first case's deadline re-arms for the case running then)
        out = [await _case(watch, 0.05, 0.03) for _ in range(5)]
        watch.close()
        return out

    assert asyncio.run(main()) == ["done"] * 5


def test_a_shorter_deadline_after_a_longer_one_still_fires_on_time() -> None:
    async def main() -> tuple[list[str], float]:
        watch = _watch()
        first = await _case(watch, 10.0, 0.0)  # arms the timer 10 s away
        t0 = time.perf_counter()
        second = await _case(watch, 0.05, 5.0)
        took = time.perf_counter() - t0
        third = await _case(watch, 10.0, 0.01)  # the cancel of the second is not carried on
        watch.close()
        return [first, second, third], took

    out, took = asyncio.run(main())
    assert out == ["done", "timeout", "done"]
    assert took < 2.0  # the 50 ms deadline, not the 5 s sleep nor the 10 s timer


def test_a_stop_of_the_run_stays_a_cancellation() -> None:
    async def main() -> str:
        async def worker() -> str:
            return await _case(_watch(), 10.0, 5.0)

        task = asyncio.ensure_future(worker())
        await asyncio.sleep(0.02)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "not cancelled"

    assert asyncio.run(main()) == "cancelled"


def test_a_swallowed_timeout_leaves_the_task_uncancelled() -> None:
    async def main() -> tuple[int, str]:
        watch = _watch()
        loop = asyncio.get_running_loop()
        # user code that eats the cancel: no TimeoutError, no cancel left pending
        with watch.at(loop.time() + 0.02), contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(1.0)
        task = asyncio.current_task()
        assert task is not None
        after = await _case(watch, 1.0, 0.01)
        watch.close()
        return task.cancelling(), after

    assert asyncio.run(main()) == (0, "done")


@pytest.mark.parametrize("parallel", [1, 3])
def test_run_times_out_only_the_slow_cases(parallel: int) -> None:
    """Through the engine: slow cases time out at the case's limit; the fast cases that
    share their worker (and its timer) before and after them pass."""

    async def agent(messages: list[dict[str, str]]) -> str:
        text = messages[-1]["content"]
        await asyncio.sleep(1.0 if text.startswith("slow") else 0.01)
        return "ok"

    cases = [
        Case(
            id=f"c{i}",
            input=[Message(content=("slow" if i % 4 == 2 else "fast") + f" {i}")],
            assertions=[{"kind": "contains", "value": "ok"}],
        )
        for i in range(12)
    ]
    run = cl.run(Suite(id="t", cases=cases), agent, parallel=parallel, timeout=0.2)
    status = {r.case_id: r.status for r in run.results}
    assert status == {f"c{i}": "timeout" if i % 4 == 2 else "passed" for i in range(12)}
    assert all("timeout after 0.2s" in (r.error or "") for r in run.results if r.case_id == "c2")
