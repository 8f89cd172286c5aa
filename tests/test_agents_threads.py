"""Sync function agents run on a bounded pool of reused daemon threads.

A thread per call cost more than the case itself; the pool keeps as many threads as calls in
flight (the run's `parallel` at most), abandons a hung call at its timeout without stalling
the other cases, and lets its threads go when the run ends without waiting on a hung one.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import convlab as cl
from convlab._threads import DaemonPool
from convlab.agents.function import FunctionAgent
from convlab.model import Case, Message, Suite


def cases(n: int, prefix: str = "c") -> list[Case]:
    return [
        Case(
            id=f"{prefix}{i}",
            input=[Message(content=f"hi {i}")],
            assertions=[{"kind": "contains", "value": f"hi {i}"}],
        )
        for i in range(n)
    ]


def test_sync_calls_reuse_at_most_parallel_threads() -> None:
    seen: set[threading.Thread] = set()

    def echo(messages: list[dict[str, Any]]) -> str:
        seen.add(threading.current_thread())
        time.sleep(0.002)  # long enough for calls to overlap, so the pool must grow
        return "you said " + str(messages[-1]["content"])

    run = cl.run(Suite(id="s", cases=cases(40)), echo, parallel=3, progress=False)
    assert [r.status for r in run.results] == ["passed"] * 40
    assert 1 <= len(seen) <= 3, f"{len(seen)} threads for 40 calls at parallel=3"
    assert threading.current_thread() not in seen  # never on the event loop's thread


def test_a_hung_call_is_abandoned_and_its_threads_go_at_the_end() -> None:
    release = threading.Event()
    guard = threading.Timer(30, release.set)  # a regression fails instead of hanging
    guard.daemon = True
    guard.start()
    threads: dict[str, threading.Thread] = {}

    def agent(messages: list[dict[str, Any]]) -> str:
        text = str(messages[-1]["content"])
        threads[text] = threading.current_thread()
        if text == "hi stuck":
            release.wait()
        return "you said " + text

    stuck = Case(id="stuck", input=[Message(content="hi stuck")])
    suite = Suite(id="s", cases=[stuck, *cases(8)])
    try:
        run = cl.run(suite, FunctionAgent(agent), parallel=2, timeout=2, progress=False)
        still_stuck = not release.is_set()
        status = {r.case_id: r.status for r in run.results}
        assert still_stuck, "run() waited for the hung call"
        assert status == {"stuck": "timeout", **{f"c{i}": "passed" for i in range(8)}}
        hung = threads.pop("hi stuck")
        assert hung.is_alive() and hung.daemon
        # the others ran on at most 2 threads besides the hung one, all let go by the run's end
        others = set(threads.values()) - {hung}
        assert 1 <= len(others) <= 2
        for thread in others:
            thread.join(timeout=10)
        assert not any(t.is_alive() for t in others), "a pool thread outlived the run"
    finally:
        release.set()
        guard.cancel()


def test_the_pool_grows_only_when_no_thread_is_free() -> None:
    pool = DaemonPool()
    gate = threading.Barrier(3, timeout=10)

    def meet() -> threading.Thread:
        gate.wait()
        return threading.current_thread()

    async def main() -> tuple[list[threading.Thread], list[threading.Thread]]:
        together = await asyncio.gather(*(pool.run(meet) for _ in range(3)))
        one_by_one = [await pool.run(threading.current_thread) for _ in range(20)]
        return together, one_by_one

    try:
        together, one_by_one = asyncio.run(main())
        # three calls that wait for each other need three threads; later calls reuse them
        assert len(set(together)) == 3
        assert set(one_by_one) <= set(together)
        assert pool.started == pool.threads == 3
    finally:
        pool.close()


def test_a_closed_pool_still_answers_and_errors_come_back() -> None:
    pool = DaemonPool()
    pool.close()

    def boom() -> None:
        raise ValueError("nope")

    async def main() -> tuple[int, str]:
        try:
            await pool.run(boom)
        except ValueError as exc:
            return await pool.run(lambda: 41 + 1), str(exc)
        raise AssertionError("the error was lost")

    assert asyncio.run(main()) == (42, "nope")


def test_threads_left_idle_leave_and_the_pool_still_answers() -> None:
    pool = DaemonPool(idle_s=0.05)
    try:
        assert asyncio.run(pool.run(lambda: 1)) == 1
        guard = time.monotonic() + 10
        while pool.threads and time.monotonic() < guard:  # the idle thread leaves on its own
            time.sleep(0.02)
        assert pool.threads == 0
        assert asyncio.run(pool.run(lambda: 2)) == 2  # a new thread takes the next call
        assert pool.started == 2
    finally:
        pool.close()


def test_sync_hooks_reuse_the_shared_user_threads(tmp_path: Any, monkeypatch: Any) -> None:
    """Hooks, tools and graders (everything `call_user` runs) share one pool: a run of 40
    cases with a sync after hook starts no thread per call."""
    import importlib

    from convlab._user_code import call_user

    (tmp_path / "pool_hooks.py").write_text(
        "import threading, time\n"
        "seen = set()\n"
        "def after(case, outcome):\n"
        "    seen.add(threading.current_thread())\n"
        "    time.sleep(0.002)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    hooked = [
        Case.model_validate({**c.model_dump(), "hooks": {"after": "pool_hooks:after"}})
        for c in cases(40)
    ]
    run = cl.run(
        Suite(id="s", cases=hooked), lambda m: m[-1]["content"], parallel=3, progress=False
    )
    assert [r.status for r in run.results] == ["passed"] * 40, run.results[0].error
    seen = importlib.import_module("pool_hooks").seen
    assert 1 <= len(seen) <= 6 and all(t.name == "convlab-user" and t.daemon for t in seen)

    async def boom() -> None:
        def fail() -> None:
            raise KeyError("gone")

        try:
            await call_user(fail)
        except KeyError as exc:
            assert "gone" in str(exc)
        else:
            raise AssertionError("the error did not come back")

    asyncio.run(boom())
