"""Review findings turned into tests: nothing is lost and nothing is mislabelled when
hooks fail, runs are stopped, checks error or simulators are misnamed."""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
from typing import Any

import pytest

import convlab as cl
from convlab.cli import main
from convlab.model import Case, Message, Suite
from convlab.plan import fingerprint

GUARD_S = 30.0
"""Code waiting for an event gives up after this long, so a regression fails, not hangs."""


def std(case_id: str, text: str = "hi", **kw) -> Case:
    return Case(id=case_id, input=[Message(content=text)], **kw)


class Closing:
    """A function agent that records whether the run closed it."""

    def __init__(self, reply: str = "ok", delay: float = 0.0) -> None:
        self.closed = False
        self.agent = cl.agents.function(self.answer)
        self.agent.aclose = self._aclose  # type: ignore[method-assign]
        self.reply, self.delay = reply, delay

    async def answer(self, messages):
        await asyncio.sleep(self.delay)
        return self.reply

    async def _aclose(self) -> None:
        self.closed = True


def test_a_failing_before_hook_errors_every_instance_runs_after_and_closes_the_agent():
    seen, agent = [], Closing()

    def before(suite):
        raise RuntimeError("db down")

    run = cl.run(
        Suite(id="s", cases=[std("a"), std("b")]),
        agent.agent,
        progress=False,
        before=before,
        after=lambda run, data: seen.append(run.status),
    )
    assert run.status == "failed" and "before hook failed: RuntimeError: db down" in run.error
    assert [r.status for r in run.results] == ["error", "error"]
    assert seen == ["failed"] and agent.closed


def test_a_failing_after_hook_keeps_the_run():
    def after(run, data):
        raise ValueError("cleanup broke")

    run = cl.run(Suite(id="s", cases=[std("a")]), lambda m: "ok", progress=False, after=after)
    assert run.results[0].status == "passed"
    assert run.status == "failed" and "cleanup broke" in run.error


def test_stopping_while_the_run_finishes_still_returns_the_run():
    in_after, stopping = threading.Event(), threading.Event()

    async def slow_after(run, data):
        in_after.set()
        await asyncio.to_thread(stopping.wait, GUARD_S)  # until stop has been asked for

    handle = cl.start(Suite(id="s", cases=[std("a")]), lambda m: "ok", after=slow_after)
    assert in_after.wait(GUARD_S), "the after hook never ran"
    handle.cancel()  # what stop() does first; the hook is released only once it is asked
    stopping.set()
    run = handle.stop()
    assert run.status == "cancelled"
    assert run.results[0].status == "passed"


def test_an_instance_stopped_mid_conversation_keeps_its_turns_and_runs_after(tmp_path, monkeypatch):
    (tmp_path / "stophooks.py").write_text(
        "CALLS = []\ndef after(case, outcome, data):\n    CALLS.append(outcome.status)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    second_turn = threading.Event()

    async def agent(messages):
        if messages[-1]["content"] == "two":
            second_turn.set()
            await asyncio.wait_for(asyncio.Event().wait(), GUARD_S)  # until stopped
        return "ok"

    case = Case(
        id="c",
        mode="turns",
        hooks={"after": "stophooks:after"},
        turns=[{"input": {"text": "one"}}, {"input": {"text": "two"}}],
    )
    handle = cl.start(Suite(id="s", cases=[case]), agent)
    assert second_turn.wait(GUARD_S), "the second turn never started"
    run = handle.stop()
    [res] = run.results
    assert res.status == "cancelled" and res.started_at is not None
    assert res.turns[0].observation.text == "ok" and len(res.turns) == 2
    import stophooks

    assert stophooks.CALLS == ["cancelled"]


def test_a_dynamic_case_that_times_out_keeps_the_checkpoints_it_reached():
    async def agent(messages):
        if len(messages) > 1:
            await asyncio.sleep(30)
        return "hello there"

    case = Case(
        id="d",
        mode="dynamic",
        input=[Message(content="hi")],
        limits={"max_turns": 5},
        checkpoints=[
            {"id": "greet", "assertion": {"kind": "contains", "value": "hello"}},
            {"id": "never", "assertion": {"kind": "contains", "value": "zzz"}},
        ],
    )
    keep_going = lambda messages, ctx: "tell me more"  # noqa: E731 - a user who never stops
    [res] = cl.run(
        Suite(id="s", cases=[case]), agent, timeout=1, simulator=keep_going, progress=False
    ).results
    assert res.status == "timeout"
    assert {c.id: c.reached_at_turn for c in res.checkpoints} == {"greet": 1, "never": None}


def test_a_checkpoint_whose_check_errors_is_an_error_not_max_turns():
    case = Case(
        id="d",
        mode="dynamic",
        input=[Message(content="hi")],
        limits={"max_turns": 3},
        checkpoints=[{"id": "judged", "assertion": {"kind": "judge", "question": "Polite?"}}],
    )
    [res] = cl.run(Suite(id="s", cases=[case]), lambda m: "hello", progress=False).results
    assert res.status == "error" and "checkpoint judged" in res.error and "judge" in res.error
    assert len(res.turns) == 1


def test_a_misnamed_case_simulator_is_an_error_not_the_default():
    case = Case(
        id="d",
        mode="dynamic",
        simulator={"use": "nosuchmodule_xyz:sim"},
        checkpoints=[{"id": "k", "assertion": {"kind": "contains", "value": "x"}}],
    )
    [res] = cl.run(Suite(id="s", cases=[case]), lambda m: "x", progress=False).results
    assert res.status == "error" and "nosuchmodule_xyz:sim" in res.error


def test_an_erroring_step_stops_the_remaining_steps(register_evaluator):
    @register_evaluator("always_breaks")
    def breaks(ctx, parameters):
        raise RuntimeError("broken evaluator")

    sent = []
    case = Case(
        id="c",
        mode="turns",
        turns=[
            {
                "input": {"text": "one"},
                "assertions": [{"kind": "custom", "evaluator": "always_breaks"}],
            },
            {"input": {"text": "two"}},
        ],
    )
    [res] = cl.run(
        Suite(id="s", cases=[case]), lambda m: sent.append(m[-1]["content"]) or "ok", progress=False
    ).results
    assert res.status == "error" and sent == ["one"]


def test_an_empty_reply_still_checks_expected_tools(tmp_path):
    f = tmp_path / "agent.yaml"
    f.write_text(
        textwrap.dedent("""\
        test_cases:
          - name: calc
            turns:
              - input: "what is 2+2?"
                ground_truth: "4"
                expected_tools: [calculator]
        """)
    )
    [res] = cl.run(cl.load(f), lambda m: "", progress=False).results
    assert res.status == "failed" and "calculator" in res.error


def test_suite_assertions_see_a_zero_filled_summary_and_fail_the_cli(tmp_path, capsys):
    f = tmp_path / "s.json"
    f.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "id": "s",
                "name": "S",
                "scenarios": [
                    {
                        "id": "a",
                        "name": "a",
                        "writePolicy": "read_only",
                        "steps": [{"id": "x", "input": {"text": "hi"}}],
                    }
                ],
                "assertions": [
                    {
                        "id": "none-failed",
                        "kind": "check",
                        "path": ["summary", "failed"],
                        "operator": "equals",
                        "value": 0,
                    },
                    {
                        "id": "done",
                        "kind": "check",
                        "path": ["status"],
                        "operator": "equals",
                        "value": "completed",
                    },
                    {
                        "id": "two",
                        "kind": "check",
                        "path": ["summary", "passed"],
                        "operator": "equals",
                        "value": 2,
                    },
                ],
            }
        )
    )
    run = cl.run(cl.load(f), lambda m: "ok", progress=False)
    assert [a.status for a in run.suite_assertions] == ["passed", "passed", "failed"]
    (tmp_path / "agentmod.py").write_text("def agent(messages):\n    return 'ok'\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        assert main(["run", "-i", str(f), "-n", "agentmod:agent"]) == 1
    finally:
        sys.path.remove(str(tmp_path))


def test_resume_fingerprint_does_not_depend_on_where_the_suite_was_read_from(tmp_path, monkeypatch):
    f = tmp_path / "c.jsonl"
    f.write_text('{"id": "a", "input": "hi"}\n')
    monkeypatch.chdir(tmp_path)
    assert fingerprint(cl.load("c.jsonl")) == fingerprint(cl.load(f))


def test_cli_usage_errors_are_reported_before_running(tmp_path, capsys):
    ex = "examples/finance"
    assert main(["run", "-i", ex, "-n", "demo:finance", "--timeout", "5x"]) == 2
    assert "--timeout" in capsys.readouterr().err
    assert main(["run", "-i", ex, "-n", "demo:finance", "--run", "("]) == 2
    assert "invalid regex" in capsys.readouterr().err
    assert main(["run", "-i", ex, "-n", "demo:finance", "-o", str(tmp_path / "r.pdf")]) == 2
    assert "supported suffixes" in capsys.readouterr().err
    assert main(["run", "-i", "examples/expens.jsonl", "-n", "demo:expense"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["run", "-i", ex, "-n", "nosuchmodule_q:agent"]) == 2


def test_sync_user_code_calling_sys_exit_is_that_cases_error(register_evaluator):
    import sys

    def agent(messages):
        if messages[-1]["content"] == "quit":
            sys.exit(3)
        return "ok"

    @register_evaluator("exits")
    def exits(ctx, parameters):
        sys.exit(4)

    suite = Suite(
        id="s",
        cases=[
            std("a", "quit"),
            std("b", "hi", assertions=[{"kind": "custom", "evaluator": "exits"}]),
            std("c", "hi"),
        ],
    )
    by = {r.case_id: r for r in cl.run(suite, agent, progress=False).results}
    assert by["a"].status == "error" and "SystemExit(3)" in by["a"].error
    assert by["b"].status == "error" and "SystemExit(4)" in by["b"].error
    assert by["c"].status == "passed"


def test_results_stay_lean_until_read_and_then_stay_the_same_objects():
    from convlab.model.results import Results

    suite = Suite(id="s", cases=[std("a"), std("b")])
    run = cl.run(suite, lambda m: "ok", progress=False)
    assert isinstance(run.results, Results)
    assert run.results._objs == [None, None]  # nothing decoded: lines only
    assert list(run.df["status"]) == ["passed", "passed"] and run.results._objs == [None, None]
    a = run.results[0]
    assert a is run.results[0] and a.turns[0].observation.text == "ok"
    a.metadata["note"] = "kept"  # a change to a result that was read sticks
    assert run.results[0].metadata == {"note": "kept"}
    assert type(a).from_json(a.to_json()) == a


def test_the_fingerprint_hashes_the_same_text_as_pydantic_dumps_without_sources():
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    suites = [
        cl.load(root / "examples" / name)
        for name in ("expense", "finance", "catalog", "cloud_drive")
    ]
    suites.append(Suite(id="empty"))
    suites.append(Suite(id="s", cases=[std("a")], assertions=[{"kind": "contains", "value": "x"}]))
    for suite in suites:
        text = suite.model_dump_json(exclude={"sources": True, "cases": {"__all__": {"source"}}})
        assert fingerprint(suite) == hashlib.sha256(text.encode()).hexdigest()[:16], suite.id


def test_a_stores_header_holds_the_suite_pydantic_dumps(tmp_path):
    """The header's suite is spliced from the fingerprint's per-case dumps (one dump per
    run): it must read back as the very suite pydantic dumps, sources and all."""
    import json
    from pathlib import Path

    from convlab.plan import write_suite

    def written(suite: Suite) -> Any:
        parts: list[bytes] = []
        write_suite(suite, parts.append)
        return json.loads(b"".join(parts))

    root = Path(__file__).resolve().parent.parent
    for name in ("expense", "finance", "catalog", "cloud_drive"):
        suite = cl.load(root / "examples" / name)
        assert any(c.source is not None for c in suite.cases) and suite.sources
        assert written(suite) == json.loads(suite.model_dump_json())
    suite = Suite(id="s", cases=[std("a")], assertions=[{"kind": "contains", "value": "x"}])
    assert written(suite) == json.loads(suite.model_dump_json())
    store = tmp_path / "s.jsonl"
    run = cl.run(cl.load(root / "examples" / "expense"), "demo:expense", store=store,
                 progress=False)  # fmt: skip
    header = json.loads(store.read_text(encoding="utf-8").splitlines()[0])["run"]
    assert header["suite"] == json.loads(run.suite.model_dump_json())
    assert header["fingerprint"] == run.fingerprint != ""
    assert cl.load_run(store).suite == run.suite


@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
def test_a_listener_that_raises_a_base_exception_stops_the_run_keeping_its_results(
    tmp_path, raised
):
    """Not an Exception: the run stops as a stop does, and nothing finished is lost."""
    suite = Suite(id="s", cases=[std(f"c{i}") for i in range(6)])
    seen: list[str] = []

    def listener(event: Any) -> None:
        if type(event).__name__ == "CaseFinished":
            seen.append(event.result.case_id)
            if len(seen) == 2:
                raise raised("stop here")

    store = tmp_path / "s.jsonl"
    with pytest.warns(RuntimeWarning, match=f"{raised.__name__}.*the run stops"):
        run = cl.run(suite, lambda m: "ok", parallel=1, store=store, progress=listener)
    assert run.status == "cancelled"
    statuses = {r.case_id: r.status for r in run.results}
    assert [statuses[c] for c in seen] == ["passed"] * len(seen) and len(seen) >= 2
    assert "cancelled" in statuses.values() and len(statuses) == 6
    stored = cl.load_run(store)
    assert stored.status == "cancelled"  # the store's end line was written
    assert {r.case_id for r in stored.results if r.status == "passed"} >= set(seen)
