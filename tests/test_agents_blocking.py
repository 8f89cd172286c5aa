"""Blocking user code never holds a run hostage.

A sync agent, simulator, script, grader, Python test or custom evaluator that never returns
makes its case a `timeout`, and `cl.run()` comes back while that code is still stuck: it runs
in a daemon thread, which neither blocks the event loop (the other cases keep going) nor is
joined when the run ends (as `asyncio.to_thread`'s executor is).
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest

import convlab as cl
from convlab.checks import EVALUATORS
from convlab.model import Case, Message, Suite
from convlab.model.suite import Checkpoint, SimulatorSpec

MODULE = "convlab_test_blocking"
GUARD_S = 30.0
"""Stuck code is released after this long at the latest, so a regression fails, not hangs."""


@pytest.fixture
def release(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The event stuck user code waits for, and a module of scripts/graders that wait on it."""
    event = threading.Event()
    guard = threading.Timer(GUARD_S, event.set)
    guard.daemon = True
    guard.start()

    def stuck(*args: Any) -> bool:
        event.wait()
        return True

    mod = types.ModuleType(MODULE)
    mod.stuck = stuck  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, mod)
    with EVALUATORS.registered("convlab_test_stuck", stuck):
        yield event
    guard.cancel()
    event.set()


def hi() -> list[Message]:
    return [Message(role="user", content="hi")]


def answer(messages: list[dict[str, Any]]) -> str:
    return "hello"


PY_TEST = "def test_stuck(x, judge):\n    import convlab_test_blocking as m\n    m.stuck()\n"


def scenario(where: str, event: threading.Event) -> tuple[Case, Any, Any]:
    """(case, agent, simulator) with user code stuck at `where`."""

    def stuck(*args: Any) -> str:
        event.wait()
        return "too late"

    if where == "agent":
        return Case(id=where, input=hi()), stuck, None
    if where == "simulator":
        case = Case(
            id=where,
            mode="dynamic",
            simulator=SimulatorSpec(persona="someone", goal="say hi"),
            checkpoints=[Checkpoint(id="c", assertion={"kind": "contains", "value": "x"})],
        )
        return case, answer, stuck
    spec: dict[str, Any] = {
        "script": {"kind": "script", "script": f"{MODULE}:stuck"},
        "grader": {"kind": "grader", "grader": f"{MODULE}:stuck"},
        "custom": {"kind": "custom", "evaluator": "convlab_test_stuck"},
        "python_test": {
            "kind": "python_test",
            "function": "test_stuck",
            "code": PY_TEST,
            "file": "stuck_test.py",
            "line": 1,
        },
    }[where]
    return Case(id=where, input=hi(), assertions=[spec]), answer, None


@pytest.mark.parametrize(
    "where", ["agent", "simulator", "script", "grader", "python_test", "custom"]
)
def test_stuck_sync_user_code_times_out_and_the_run_still_ends(
    release: threading.Event, where: str
) -> None:
    case, agent, simulator = scenario(where, release)
    run = cl.run(
        Suite(id="s", cases=[case]), agent, simulator=simulator, timeout=0.3, progress=False
    )
    still_stuck = not release.is_set()
    [row] = run.df.to_dict("records")
    assert row["status"] == "timeout", row["error"]
    assert "timeout after" in row["error"]
    assert still_stuck, "run() waited for the stuck user code to return"


def test_a_stuck_sync_evaluator_does_not_stall_the_other_cases(release: threading.Event) -> None:
    stuck = Case(
        id="stuck",
        input=hi(),
        assertions=[{"kind": "custom", "evaluator": "convlab_test_stuck"}],
    )
    fine = [
        Case(id=f"ok{i}", input=hi(), assertions=[{"kind": "contains", "value": "hello"}])
        for i in range(3)
    ]
    run = cl.run(Suite(id="s", cases=[stuck, *fine]), answer, parallel=2, timeout=1, progress=False)
    assert not release.is_set()
    status = {r["case_id"]: r["status"] for r in run.df.to_dict("records")}
    assert status == {"stuck": "timeout", "ok0": "passed", "ok1": "passed", "ok2": "passed"}
