"""Faults against a real HTTP server on 127.0.0.1: each affects only its own case."""

from __future__ import annotations

import json

import pytest
from fault_server import FaultServer, bad_json, chat_faults, drop, error, hang, no_choices

import convlab as cl
from convlab.model import Case, Message, Suite

BY_WORD = {
    "429": error(429, retry_after="0", times=1),
    "500": error(500),
    "drop": drop,
    "slow": hang,
    "badjson": bad_json,
    "empty": no_choices,
}


@pytest.fixture(scope="module")
def server():
    """An OpenAI-compatible endpoint whose behaviour depends on the last user message."""
    with FaultServer(chat_faults(BY_WORD)) as srv:
        yield srv


def test_each_fault_ends_as_its_own_case_status(server):
    words = ["ok", "429", "500", "drop", "slow", "badjson", "empty", "ok2"]
    suite = Suite(
        id="faults",
        cases=[
            Case(
                id=w, input=[Message(content=w)], assertions=[{"kind": "contains", "value": "echo"}]
            )
            for w in words
        ],
    )
    agent = cl.agents.openai("m", base_url=f"{server.base}/v1", api_key="sk-test-secret")
    run = cl.run(suite, agent, parallel=8, timeout=1.5, retries=1, progress=False)
    by = {r.case_id: r for r in run.results}
    assert by["ok"].status == by["ok2"].status == "passed"
    assert by["429"].status == "passed" and by["429"].attempts == 2
    assert by["500"].status == "error" and "500" in by["500"].error
    assert by["500"].attempts == 2
    assert by["drop"].status == "error"
    assert by["slow"].status == "timeout"
    assert by["badjson"].status == "error" and "JSON" in by["badjson"].error
    assert by["empty"].status == "error" and "choices" in by["empty"].error
    dumped = run.to_json()
    assert "sk-test-secret" not in dumped and "sk-test-secret" not in repr(agent)
    assert json.loads(dumped)["results"][0]["usage"]["total_tokens"] == 5


def test_an_evaluator_that_raises_is_an_error_of_that_case_only(register_evaluator):
    @register_evaluator("explodes")
    def explodes(ctx, parameters):
        raise ValueError("evaluator bug")

    suite = Suite(
        id="s",
        cases=[
            Case(
                id="bad",
                input=[Message(content="hi")],
                assertions=[{"kind": "custom", "evaluator": "explodes"}],
            ),
            Case(
                id="good",
                input=[Message(content="hi")],
                assertions=[{"kind": "contains", "value": "hi"}],
            ),
        ],
    )
    by = {r.case_id: r for r in cl.run(suite, lambda m: "hi", progress=False).results}
    assert by["bad"].status == "error" and "evaluator bug" in by["bad"].error
    assert by["good"].status == "passed"


def test_unknown_custom_evaluator_is_rejected_before_any_case_runs():
    calls = []
    suite = Suite(
        id="s",
        cases=[
            Case(
                id="a",
                input=[Message(content="hi")],
                assertions=[{"kind": "custom", "evaluator": "nope"}],
            )
        ],
    )
    with pytest.raises(cl.SuiteError, match="nope"):
        cl.run(suite, lambda m: calls.append(m) or "x", progress=False)
    assert calls == []
