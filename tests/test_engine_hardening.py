"""Agents and runs: shared agents stay usable, agent faults stay inside their
case, hooks keep to the per-case timeout, closing never loses the Run, hook modules are
loaded per file, and no error is swallowed without a word."""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from fault_server import Counts
from test_agents_openai import KEY, Server, fake_model

import convlab as cl
from convlab.model import Case, Message, Suite

GUARD_S = 30.0
"""Code waiting for an event gives up after this long, so a regression fails, not hangs."""


def std(case_id: str, text: str = "hi", **kw: Any) -> Case:
    return Case(id=case_id, input=[Message(content=text)], **kw)


# --- 6: a shared agent object stays usable across runs and concurrent use -------------


class HoldingServer(Server):
    """The fake model, but `hold` waits (the run's request stays in flight) until released."""

    def __init__(self) -> None:
        super().__init__(self.handle)
        self.holding = threading.Event()
        self.held = 0
        self.release_hold: asyncio.Event | None = None

    async def handle(self, request: web.Request, counts: Counts) -> web.StreamResponse:
        body = await request.json()
        if body["messages"][-1].get("content").startswith("hold"):
            if self.release_hold is None:
                self.release_hold = asyncio.Event()
            self.held += 1
            if self.held == 4:
                self.holding.set()
            await asyncio.wait_for(self.release_hold.wait(), GUARD_S)
            return web.json_response(
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": "held"}}]}
            )
        return await fake_model(request, counts)

    def let_go(self) -> None:
        def go() -> None:
            assert self.release_hold is not None
            self.release_hold.set()

        self.loop.call_soon_threadsafe(go)


def test_two_runs_and_an_ask_during_a_start_on_one_openai_agent() -> None:
    srv = HoldingServer()
    with srv:
        agent = cl.agents.openai("m", base_url=srv.url, api_key=KEY)
        suite = Suite(id="s", cases=[std(f"c{i}", f"n{i}") for i in range(6)])
        first = cl.run(suite, agent, progress=False, parallel=3, retries=0)
        second = cl.run(suite, agent, progress=False, parallel=3, retries=0)
        assert [r.status for r in first.results + second.results] == ["passed"] * 12

        holds = [std(f"hold{i}", f"hold{i}") for i in range(4)]
        held = Suite(id="h", cases=[*holds, *suite.cases])
        handle = cl.start(held, agent, progress=False, parallel=4, retries=0)
        assert srv.holding.wait(GUARD_S)
        answer = cl.ask(agent, "Hello")  # closes its own loop's pool, not the run's
        assert answer.observation.text == "You said: Hello"
        srv.let_go()
        run = handle.wait(GUARD_S)
        assert [(r.case_id, r.status, r.error) for r in run.results] == [
            (c.id, "passed", None) for c in held.cases
        ]


# --- 7: agent faults stay inside their case ----------------------------------------


class Failed(BaseException):
    """Like pytest's `Failed`: a BaseException that is no Exception."""


def test_a_sync_agent_raising_a_base_exception_errors_its_case_only() -> None:
    def agent(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"]
        if text == "fail":
            raise Failed("assert in agent")
        if text == "exit":
            raise SystemExit(3)
        return "ok"

    suite = Suite(id="s", cases=[std("a", "fail"), std("b", "exit"), std("c", "hi")])
    run = cl.run(suite, agent, progress=False, retries=0)
    assert run.status == "completed"
    assert [r.status for r in run.results] == ["error", "error", "passed"]
    assert "Failed: assert in agent" in (run.results[0].error or "")


def test_an_async_agent_raising_keyboard_interrupt_or_cancelled_errors_its_case() -> None:
    async def agent(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"]
        if text == "kbd":
            raise KeyboardInterrupt
        if text == "cancel":
            raise asyncio.CancelledError("agent's own")
        return "ok"

    suite = Suite(id="s", cases=[std("a", "kbd"), std("b", "cancel"), std("c", "hi")])
    run = cl.run(suite, agent, progress=False, retries=0, parallel=1)
    assert run.status == "completed"
    assert [r.status for r in run.results] == ["error", "error", "passed"]
    assert "KeyboardInterrupt" in (run.results[0].error or "")
    assert "CancelledError" in (run.results[1].error or "")


def test_an_async_agent_blocking_the_loop_is_a_timeout_naming_how_long() -> None:
    async def agent(messages: list[dict[str, Any]]) -> str:
        time.sleep(0.6)  # noqa: ASYNC251 - blocks the loop: the 0.2 s timeout cannot fire
        return "ok"

    run = cl.run(Suite(id="s", cases=[std("a")]), agent, progress=False, timeout=0.2)
    [result] = run.results
    assert result.status == "timeout"
    assert "timeout after 0.2s" in (result.error or "")
    # the figure is measured, so a loaded machine may report more than the 0.6 s slept, never less
    blocked = re.search(r"blocked the event loop for (\d+\.\d)s", result.error or "")
    assert blocked and float(blocked[1]) >= 0.6, result.error


# --- 8: case hooks run within the per-case timeout, in a daemon thread ---------------

GATE = threading.Event()
"""What the slow hooks below wait for (set when the test ends)."""
DAEMON: list[bool] = []


def hooked(tmp_path: Path, case_id: str, code: str, **hooks: str) -> Case:
    """A case whose hooks live in `hooks_<case_id>.py` beside its (pretend) suite file."""
    (tmp_path / f"hooks_{case_id}.py").write_text(code)
    extra: dict[str, Any] = {}
    if case_id == "failing":
        extra["assertions"] = [{"kind": "contains", "value": "no"}]
    return std(
        case_id,
        hooks={k: f"hooks_{case_id}:{v}" for k, v in hooks.items()},
        source={"file": str(tmp_path / "suite.jsonl")},
        **extra,
    )


SLOW_HOOKS = (
    "import threading\n"
    "from test_engine_hardening import DAEMON, GATE\n"
    "def before(case):\n"
    "    DAEMON.append(threading.current_thread().daemon)\n"
    "    GATE.wait(30)\n"
    "def after(case, outcome):\n"
    "    GATE.wait(30)\n"
)


def test_a_slow_case_hook_is_a_timeout(tmp_path: Path) -> None:
    try:
        case = hooked(tmp_path, "a", SLOW_HOOKS, before="before")
        run = cl.run(Suite(id="s", cases=[case]), lambda m: "ok", progress=False, timeout=0.2)
        assert [r.status for r in run.results] == ["timeout"]
        assert DAEMON == [True]
        case = hooked(tmp_path, "b", SLOW_HOOKS, after="after")
        run = cl.run(Suite(id="s", cases=[case]), lambda m: "ok", progress=False, timeout=0.2)
        [result] = run.results
        assert result.status == "error" and "after hook failed" in (result.error or "")
    finally:
        GATE.set()


# --- 9: a failing aclose never loses the Run; the rest are still closed --------------


def test_a_raising_aclose_keeps_the_run_and_closes_the_judge_and_simulators() -> None:
    closed: list[str] = []
    agent = cl.agents.function(lambda m: "ok")
    judge = cl.agents.function(lambda m: "yes")

    async def broken() -> None:
        closed.append("agent")
        raise RuntimeError("pool gone")

    async def judge_close() -> None:
        closed.append("judge")

    agent.aclose = broken  # type: ignore[method-assign]
    judge.aclose = judge_close  # type: ignore[method-assign]
    run = cl.run(Suite(id="s", cases=[std("a")]), agent, judge=judge, progress=False)
    assert [r.status for r in run.results] == ["passed"]
    assert closed == ["agent", "judge"]
    assert "RuntimeError: pool gone" in (run.error or "")


# --- 10: hook modules are per suite file --------------------------------------------


def test_two_suites_with_their_own_env_test_get_their_own_module(tmp_path: Path) -> None:
    sys_path = list(sys.path)
    runs = []
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "env_test.py").write_text(
            f"def before(case):\n    return {name!r}\n"
            "def after(case, outcome, data):\n"
            "    if data != " + repr(name) + ":\n"
            "        raise RuntimeError(f'wrong module: {data}')\n"
        )
        case = std(
            "a",
            hooks={"before": "env_test.before", "after": "env_test.after"},
            source={"file": str(folder / "suite.jsonl")},
        )
        runs.append(cl.run(Suite(id=name, cases=[case]), lambda m: "ok", progress=False))
    assert [r.results[0].status for r in runs] == ["passed", "passed"]
    assert sys.path == sys_path and "env_test" not in sys.modules


# --- 11: no error is swallowed without a word ----------------------------------------


def test_a_raising_listener_is_reported_once_and_results_are_kept() -> None:
    from convlab.engine.conversation import Env
    from convlab.engine.runner import Runner, Settings

    def listener(event: Any) -> None:
        raise ValueError("view broke")

    suite = Suite(id="s", cases=[std("a"), std("b")])
    runner = Runner(
        Env(agent=cl.agents.function(lambda m: "ok"), suite=suite), Settings(), [listener]
    )
    with pytest.warns(RuntimeWarning, match="listener .*ValueError: view broke") as record:
        run = asyncio.run(runner.execute())
    assert len([w for w in record if "view broke" in str(w.message)]) == 1
    assert [r.status for r in run.results] == ["passed", "passed"]


BROKEN_AFTER = "def after(case, outcome):\n    raise RuntimeError('cleanup broke')\n"


def test_an_after_hook_error_on_a_failed_or_stopped_case_is_recorded(tmp_path: Path) -> None:
    failing = hooked(tmp_path, "failing", BROKEN_AFTER, after="after")
    run = cl.run(Suite(id="s", cases=[failing]), lambda m: "ok", progress=False)
    [result] = run.results
    assert result.status == "failed"
    assert "after hook failed: RuntimeError: cleanup broke" in (result.error or "")

    started = threading.Event()

    async def slow(messages: list[dict[str, Any]]) -> str:
        started.set()
        await asyncio.sleep(GUARD_S)
        return "late"

    stopped = hooked(tmp_path, "stopped", BROKEN_AFTER, after="after")
    handle = cl.start(Suite(id="s", cases=[stopped]), slow, progress=False)
    assert started.wait(GUARD_S)
    run = handle.stop()
    [result] = run.results
    assert result.status == "cancelled"
    assert "after hook failed: RuntimeError: cleanup broke" in (result.error or "")


def test_stored_lines_that_fail_validation_are_reported_on_resume(tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    suite = Suite(id="s", cases=[std("a"), std("b")])
    cl.run(suite, lambda m: "ok", progress=False, store=store)
    lines = store.read_text().splitlines(keepends=True)
    bad = lines[1].replace('"status":"passed"', '"status":"bogus"')
    store.write_text(lines[0] + bad + lines[2] + "{not json\n")
    with pytest.warns(RuntimeWarning, match=r"2 stored line\(s\) could not be read") as record:
        run = cl.run(suite, lambda m: "ok", progress=False, store=store, resume=True)
    assert "line 2:" in str(record[0].message) and "line 4:" in str(record[0].message)
    assert [r.status for r in run.results] == ["passed", "passed"]
