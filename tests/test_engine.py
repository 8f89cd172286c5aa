"""The engine end to end on function agents: statuses, modes, faults, retries, hooks, store."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

import convlab as cl
from convlab.engine.store import StoreError
from convlab.errors import AgentHTTPError
from convlab.model import Case, Message, Suite


def echo(messages, ctx=None):
    last = messages[-1]["content"]
    if last == "tool please":
        return cl.Reply(text="done", tool_calls=[cl.ToolCall("lookup", {"q": 1})])
    if last == "boom":
        raise RuntimeError("agent exploded")
    return f"echo: {last}"


GUARD_S = 30.0
"""Code waiting for an event gives up after this long, so a regression fails, not hangs."""


async def forever() -> None:
    """Wait until cancelled (at most GUARD_S): what a stuck agent does."""
    await asyncio.wait_for(asyncio.Event().wait(), GUARD_S)


def std(case_id: str, text: str, *specs: dict, **kw) -> Case:
    return Case(id=case_id, input=[Message(content=text)], assertions=list(specs), **kw)


def contains(value: str) -> dict:
    return {"kind": "contains", "value": value}


def test_statuses_of_standard_cases():
    suite = Suite(
        id="s",
        cases=[
            std("p", "Hello", contains("echo: Hello")),
            std("f", "Hello", contains("nope")),
            std("t", "tool please", {"kind": "tool_called", "value": "lookup"}),
            std("e", "boom", contains("x")),
            std("s", "x", skip="skip: true"),
        ],
    )
    run = cl.run(suite, echo, parallel=2, progress=False)
    by = {r.case_id: r for r in run.results}
    assert {k: r.status for k, r in by.items()} == {
        "p": "passed",
        "f": "failed",
        "t": "passed",
        "e": "error",
        "s": "skipped",
    }
    assert "agent exploded" in by["e"].error
    assert "nope" in by["f"].error
    assert [r.case_id for r in run.results] == ["p", "f", "t", "e", "s"]  # suite order


def test_turns_go_on_after_a_failed_check_and_final_checks_see_the_last_turn():
    case = Case(
        id="c",
        mode="turns",
        turns=[
            {"input": {"text": "one"}, "assertions": [contains("zzz")]},
            {"input": {"text": "two"}, "assertions": [contains("echo: two")]},
        ],
        assertions=[contains("echo: two")],
    )
    [res] = cl.run(Suite(id="s", cases=[case]), echo, progress=False).results
    assert res.status == "failed"
    assert [t.status for t in res.turns] == ["failed", "passed"]
    assert res.error.startswith("turn 1:")
    assert [a.status for a in res.assertions] == ["passed"]  # final checks still ran
    assert len(res.turns[1].messages) == 1 and res.turns[1].observation.text == "echo: two"


def test_an_agent_error_stops_the_remaining_turns():
    case = Case(
        id="c", mode="turns", turns=[{"input": {"text": "boom"}}, {"input": {"text": "never sent"}}]
    )
    [res] = cl.run(Suite(id="s", cases=[case]), echo, progress=False).results
    assert res.status == "error" and len(res.turns) == 1
    assert "agent error at turn 1" in res.error


def test_timeout_marks_only_the_slow_case():
    async def slow(messages):
        if messages[-1]["content"] == "slow":
            await forever()
        return "ok"

    suite = Suite(id="s", cases=[std("slow", "slow"), std("fast", "fast", contains("ok"))])
    run = cl.run(suite, slow, timeout=2, progress=False)  # the fast case has 2 s to spare
    by = {r.case_id: r for r in run.results}
    assert by["slow"].status == "timeout" and by["slow"].error == "timeout after 2s"
    assert by["fast"].status == "passed"


def test_transient_failures_are_retried_and_counted():
    calls = {"n": 0}

    def flaky(messages):
        calls["n"] += 1
        if calls["n"] == 1:
            raise AgentHTTPError(429, "http://127.0.0.1/x", "slow down", retry_after=0.01)
        return "fine"

    [res] = cl.run(
        Suite(id="s", cases=[std("a", "hi", contains("fine"))]), flaky, progress=False
    ).results
    assert res.status == "passed" and res.attempts == 2


def test_variants_repetitions_and_runs_are_keyed_instances():
    case = Case(
        id="c",
        mode="turns",
        repetitions=2,
        turns=[
            {
                "id": "a",
                "input": {"text": "x"},
                "variants": [
                    {"id": "v1", "input": {"text": "1"}},
                    {"id": "v2", "input": {"text": "2"}},
                ],
            },
            {
                "id": "b",
                "input": {"text": "y"},
                "variants": [
                    {"id": "w1", "input": {"text": "3"}},
                    {"id": "w2", "input": {"text": "4"}},
                    {"id": "w3", "input": {"text": "5"}},
                ],
            },
        ],
    )
    run = cl.run(Suite(id="s", cases=[case]), echo, runs=2, progress=False)
    keys = {r.key for r in run.results}
    assert len(run.results) == len(keys) == 2 * 3 * 2 * 2
    one = next(r for r in run.results if r.variant == {"a": "v2", "b": "w3"})
    assert [t.observation.text for t in one.turns] == ["echo: 2", "echo: 5"]


def test_external_writes_are_blocked_unless_allowed():
    case = std("w", "hi", write_policy="external")
    [res] = cl.run(Suite(id="s", cases=[case]), echo, progress=False).results
    assert res.status == "blocked" and "EXTERNAL_WRITES_NOT_AUTHORIZED" in res.error
    [res] = cl.run(
        Suite(id="s", cases=[case]), echo, progress=False, allow_external_writes=True
    ).results
    assert res.status == "passed"


def test_fail_fast_starts_nothing_after_the_first_failure():
    suite = Suite(
        id="s", cases=[std("f", "x", contains("nope"))] + [std(f"p{i}", "x") for i in range(5)]
    )
    run = cl.run(suite, echo, parallel=1, fail_fast=True, progress=False)
    statuses = [r.status for r in run.results]
    assert statuses[0] == "failed" and set(statuses[1:]) == {"cancelled"}


def test_case_hooks_run_and_after_always_runs(tmp_path, monkeypatch):
    (tmp_path / "env_hooks.py").write_text(
        "LOG = []\n"
        "def before(case):\n    LOG.append(('before', case.id)); return 42\n"
        "def after(case, outcome, data):\n"
        "    LOG.append(('after', case.id, outcome.status, data))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = Suite(
        id="s",
        cases=[
            std("ok", "hi", hooks={"before": "env_hooks:before", "after": "env_hooks:after"}),
            std("bad", "boom", hooks={"before": "env_hooks:before", "after": "env_hooks:after"}),
        ],
    )
    cl.run(suite, echo, parallel=1, progress=False)
    import env_hooks

    assert env_hooks.LOG == [
        ("before", "ok"),
        ("after", "ok", "passed", 42),
        ("before", "bad"),
        ("after", "bad", "error", 42),
    ]


def test_run_level_hooks():
    seen = []
    cl.run(
        Suite(id="s", cases=[std("a", "hi")]),
        echo,
        progress=False,
        before=lambda suite: seen.append(suite.id) or "data",
        after=lambda run, data: seen.append((len(run.results), data)),
    )
    assert seen == ["s", (1, "data")]


def test_store_and_resume_do_not_run_anything_twice(tmp_path):
    calls = []

    def counting(messages):
        calls.append(messages[-1]["content"])
        return "ok"

    suite = Suite(id="s", cases=[std(f"c{i}", f"m{i}") for i in range(6)])
    store = tmp_path / "run.jsonl"
    cl.run(
        suite.model_copy(update={"cases": suite.cases[:3]}), counting, store=store, progress=False
    )
    lines = [json.loads(x) for x in store.read_text().splitlines()]
    assert lines[0]["type"] == "header" and len(lines) == 5 and lines[-1]["type"] == "summary"
    before = store.read_text()
    calls.clear()
    with pytest.raises(StoreError, match=r"holds results of a different suite .*resume=False"):
        cl.run(suite, counting, store=store, resume=True, progress=False)
    assert calls == [] and store.read_text() == before
    store2 = tmp_path / "run2.jsonl"
    cl.run(suite, counting, store=store2, progress=False)
    calls.clear()
    run = cl.run(suite, counting, store=store2, resume=True, progress=False)
    assert calls == [] and len(run.results) == 6


def test_start_stop_keeps_finished_results_and_cancels_the_rest():
    fourth = threading.Event()

    async def agent(messages):
        if messages[-1]["content"] == "m3":
            fourth.set()
            await forever()
        return "ok"

    suite = Suite(id="s", cases=[std(f"c{i}", f"m{i}") for i in range(10)])
    handle = cl.start(suite, agent, parallel=1, progress=False)
    assert fourth.wait(GUARD_S), "the fourth case never started"
    run = handle.stop()
    assert run.status == "cancelled"
    assert [(r.case_id, r.status) for r in run.results] == [
        *((f"c{i}", "passed") for i in range(3)),
        *((f"c{i}", "cancelled") for i in range(3, 10)),
    ]


def test_run_works_inside_a_running_event_loop():
    async def cell():
        return cl.run(Suite(id="s", cases=[std("a", "hi", contains("echo"))]), echo, progress=False)

    run = asyncio.run(cell())
    assert run.results[0].status == "passed"


def test_events_come_in_order():
    from convlab.engine.events import (
        CaseFinished,
        CaseStarted,
        RunFinished,
        RunStarted,
        TurnCompleted,
    )

    seen = []
    cl.run(Suite(id="s", cases=[std("a", "hi")]), echo, progress=seen.append)
    kinds = [type(e) for e in seen]
    assert kinds == [RunStarted, CaseStarted, TurnCompleted, CaseFinished, RunFinished]


def test_selection_resolves_against_the_previous_interaction():
    def shop(messages, ctx):
        if ctx.turn == 0:
            return cl.Reply(
                text="pick",
                interaction={
                    "id": "pick-1",  # intention-kernel's interactionSchema requires an id
                    "kind": "choice",
                    "options": [{"id": "a", "label": "Lamp"}, {"id": "b", "label": "Desk"}],
                },
            )
        return f"you chose {ctx.metadata['selected_option']['label']}"

    ok = Case(
        id="ok",
        mode="turns",
        turns=[
            {"input": {"text": "show"}},
            {
                "input": {"text": "first", "selection": {"option_index": 1}},
                "assertions": [contains("you chose Desk")],
            },
        ],
    )
    bad = Case(
        id="bad",
        mode="turns",
        turns=[
            {"input": {"text": "show"}},
            {"input": {"text": "x", "selection": {"option_label": "Chair"}}},
        ],
    )
    direct = cl.agents.function(shop, strict_input=True)  # the kernel's direct adapter
    by = {
        r.case_id: r for r in cl.run(Suite(id="s", cases=[ok, bad]), direct, progress=False).results
    }
    assert by["ok"].status == "passed" and by["ok"].code is None
    # agentAdapter.ts `send`: a label no option has is AMBIGUOUS (matches.length !== 1)
    assert by["bad"].status == "error" and "EVALUATION_SELECTION_AMBIGUOUS" in by["bad"].error
    assert by["bad"].code == by["bad"].turns[-1].code == "EVALUATION_SELECTION_AMBIGUOUS"


def test_each_instance_gets_its_own_world():
    def mutate(messages, ctx):
        ctx.world.setdefault("log", []).append(messages[-1]["content"])
        return str(len(ctx.world["log"]))

    case = Case(
        id="w",
        mode="turns",
        world={"log": []},
        repetitions=3,
        turns=[{"input": {"text": "a"}}, {"input": {"text": "b"}}],
    )
    run = cl.run(Suite(id="s", cases=[case]), mutate, progress=False)
    for r in run.results:
        assert [t.observation.text for t in r.turns] == ["1", "2"]
        assert r.turns[-1].observation.effects == {"log": ["a", "b"]}
    assert case.world == {"log": []}
