"""Judges: the `judge` kind (yes/no and rubric), Yao's validator `agent` kind, the missing-judge
error, and the answer parsers. Judges here are plain functions (any Agent works)."""

from __future__ import annotations

import asyncio
import sys
import types
from typing import Any

import pytest

from convlab.agents.protocol import Agent, AgentContext, AgentSession, as_agent
from convlab.checks import CheckContext, evaluate
from convlab.checks.judge import parse_score, parse_yesno
from convlab.errors import AgentHTTPError
from convlab.model.assertions import parse_assertion
from convlab.model.conversation import Message
from convlab.model.records import AssertionResult, Observation
from convlab.model.suite import Case


def ev(spec: dict[str, Any], obs: Observation | str, **ctx: Any) -> AssertionResult:
    if not isinstance(obs, Observation):
        obs = Observation(text=obs)
    return asyncio.run(evaluate(parse_assertion(spec), CheckContext(observation=obs, **ctx)))


def judge_saying(answer: str, seen: list[list[dict[str, Any]]] | None = None) -> Agent:
    def fn(messages: list[dict[str, Any]]) -> str:
        if seen is not None:
            seen.append(messages)
        return answer

    return as_agent(fn)


# ---------------------------------------------------------------- parsers


@pytest.mark.parametrize(
    ("answer", "yes"),
    [
        ('{"answer": "yes", "reason": "it does"}', True),
        ('```json\n{"answer": "No", "reason": "x"}\n```', False),
        ('{"passed": true}', True),
        ("Yes.", True),
        ("No, it does not.", False),
        ("After reading it carefully: yes", True),
        ("Maybe", None),
    ],
)
def test_parse_yesno(answer: str, yes: bool | None) -> None:
    assert parse_yesno(answer)[0] is yes


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ('{"score": 0.75, "reason": "good"}', 0.75),
        ("0.4", 0.4),
        ("I'd say 1", 1.0),
        ('{"score": "0.5"}', 0.5),
        ('{"score": 4}', None),  # outside 0..1
        ("great", None),
    ],
)
def test_parse_score(answer: str, score: float | None) -> None:
    assert parse_score(answer)[0] == score


# ---------------------------------------------------------------- judge kind


def test_no_judge_is_an_error_that_says_how_to_configure_one() -> None:
    for spec in (
        {"kind": "judge", "question": "Is it polite?"},
        {"kind": "judge", "rubric": "Politeness"},
        {"kind": "agent", "use": "agents:workers.test.validator", "value": "polite"},
    ):
        res = ev(spec, "hi")
        assert res.status == "error" and not res.passed
        assert "run(..., judge=...)" in res.message and res.error == res.message


def test_negate_does_not_turn_a_missing_judge_into_a_pass() -> None:
    res = ev({"kind": "judge", "question": "Is it rude?", "negate": True}, "hi")
    assert res.status == "error"


def test_yes_no_judge_sends_one_user_message_with_the_reply_and_question() -> None:
    seen: list[list[dict[str, Any]]] = []
    judge = judge_saying('{"answer": "yes", "reason": "it greets"}', seen)
    convo = [Message(role="user", content="Say hello"), Message(role="assistant", content="Hello!")]
    res = ev({"kind": "judge", "question": "Does it greet?"}, "Hello!", judge=judge, messages=convo)
    assert res.passed and res.message == "judge answered yes: it greets"
    assert (res.expected, res.actual, res.score) == ("yes", "yes", 1.0)
    assert res.details["judge_answer"] == '{"answer": "yes", "reason": "it greets"}'
    [sent] = seen
    assert len(sent) == 1 and sent[0]["role"] == "user"
    assert "Does it greet?" in sent[0]["content"] and "Say hello" in sent[0]["content"]


def test_yes_no_judge_failure_and_unreadable_answer() -> None:
    no = ev({"kind": "judge", "question": "Q?"}, "x", judge=judge_saying("No"))
    assert no.status == "failed" and no.actual == "no" and no.score == 0.0
    odd = ev({"kind": "judge", "question": "Q?"}, "x", judge=judge_saying("perhaps"))
    assert odd.status == "error" and "not yes/no" in odd.message
    assert odd.details["judge_answer"] == "perhaps"


def test_rubric_judge_scores_against_the_threshold() -> None:
    spec = {"kind": "judge", "rubric": "Is it concise?", "threshold": 0.7}
    ok = ev(spec, "x", judge=judge_saying('{"score": 0.8, "reason": "short"}'))
    assert ok.passed and ok.score == 0.8 and ok.message == "judge scored 0.8 (threshold 0.7): short"
    low = ev(spec, "x", judge=judge_saying('{"score": 0.6}'))
    assert not low.passed and low.expected == ">= 0.7" and low.actual == 0.6


def test_a_judge_that_raises_is_an_error() -> None:
    def broken(messages: list[dict[str, Any]]) -> str:
        raise ConnectionError("no route")

    res = ev({"kind": "judge", "question": "Q?"}, "x", judge=as_agent(broken))
    assert res.status == "error" and "ConnectionError: no route" in res.message


def test_judge_use_names_its_own_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = types.ModuleType("convlab_test_judges")
    mod.always_yes = lambda messages: "yes"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    res = ev({"kind": "judge", "question": "Q?", "use": "convlab_test_judges:always_yes"}, "x")
    assert res.passed


def test_any_agent_can_judge() -> None:
    class Session(AgentSession):
        async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
            return Observation(data={"answer": "yes", "reason": "structured"})

    class StructuredJudge(Agent):
        async def open(self, ctx: AgentContext) -> AgentSession:
            return Session()

    res = ev({"kind": "judge", "question": "Q?"}, "x", judge=StructuredJudge())
    assert res.passed and res.message == "judge answered yes: structured"


def test_judge_at_checkpoint_scope_reads_the_combined_output() -> None:
    seen: list[list[dict[str, Any]]] = []
    obs = Observation(text="Done", data={"secret": 1})
    ev(
        {"kind": "judge", "question": "Q?"},
        obs,
        judge=judge_saying("yes", seen),
        scope="checkpoint",
    )
    assert "Done" in seen[0][0]["content"] and "secret" not in seen[0][0]["content"]


# ---------------------------------------------------------------- Yao validator agent


def test_validator_gets_output_input_criteria_and_metadata() -> None:
    seen: list[list[dict[str, Any]]] = []
    judge = judge_saying('{"passed": true, "reason": "helpful", "score": 0.9}', seen)
    spec = {
        "kind": "agent",
        "use": "agents:workers.test.validator",
        "value": "Response should be helpful",
        "options": {"metadata": {"tone": "friendly"}},
    }
    case = Case(id="c", input=[Message(role="user", content="Help me")])
    res = ev(spec, "Sure, here is how.", judge=judge, case=case)
    assert res.passed and res.message == "helpful"
    content = seen[0][0]["content"]
    for part in (
        '"output": "Sure, here is how."',
        '"input": "Help me"',
        '"criteria": "Response should be helpful"',
        '"tone": "friendly"',
    ):
        assert part in content
    assert res.expected == {"passed": True, "reason": "helpful", "score": 0.9}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ('{"reason": "forgot"}', "validator response missing 'passed' field"),
        ('{"passed": "yes"}', "validator response missing 'passed' field"),
        ("I think it is fine", "validator agent returned invalid response format"),
        ('{"passed": false, "reason": "rude"}', "rude"),
    ],
)
def test_validator_answers_that_fail(answer: str, message: str) -> None:
    spec = {"kind": "agent", "use": "agents:v", "value": "polite"}
    res = ev(spec, "x", judge=judge_saying(answer))
    assert res.status == "failed" and res.message == message


@pytest.mark.parametrize("use", [None, "validator", "openai:gpt-4o-mini"])
def test_a_use_without_the_agents_prefix_fails_with_yaos_message(use: str | None) -> None:
    """Yao agent/test/assert.go `assertAgent`: the run's judge is never asked instead."""
    seen: list[list[dict[str, Any]]] = []
    judge = judge_saying('{"passed": true}', seen)
    spec = {"kind": "agent", "value": "polite", **({"use": use} if use else {})}
    res = ev(spec, "x", judge=judge)
    assert res.status == "failed"
    assert res.message == "agent assertion requires 'use' field with 'agents:' prefix"
    assert seen == []


def test_yao_agent_ids_map_to_convlab_agents() -> None:
    mapped: list[list[dict[str, Any]]] = []
    run_judge: list[list[dict[str, Any]]] = []
    judges = {"agents:validator": judge_saying('{"passed": false, "reason": "curt"}', mapped)}
    spec = {"kind": "agent", "use": "agents:validator", "value": "polite"}
    res = ev(spec, "x", judge=judge_saying('{"passed": true}', run_judge), judges=judges)
    assert (res.status, res.message) == ("failed", "curt") and len(mapped) == 1 and not run_judge
    assert res.details["validator"] == "agents:validator"
    other = ev({**spec, "use": "agents:other"}, "x", judge=judge_saying('{"passed": true}'))
    assert other.passed and other.details["validator"] == "the run's judge"
    nobody = ev({**spec, "use": "agents:other"}, "x", judges=judges)
    assert nobody.status == "error" and "judges={'agents:other': agent}" in nobody.message


def busy_then(answer: str, calls: list[int], status: int = 429) -> Agent:
    """A judge model that is rate-limited (or down) on its first call, then answers."""

    def fn(messages: list[dict[str, Any]]) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise AgentHTTPError(status, "https://judge.example/v1", "busy", retry_after=0)
        return answer

    return as_agent(fn)


@pytest.mark.parametrize("status", [429, 503])
def test_a_judge_rate_limited_once_is_retried_not_an_error(status: int) -> None:
    calls: list[int] = []
    judge = busy_then('{"answer": "yes", "reason": "polite"}', calls, status)
    res = ev({"kind": "judge", "question": "Is it polite?"}, "Thank you!", judge=judge)
    assert res.passed and res.message == "judge answered yes: polite"
    assert len(calls) == 2


def test_a_judge_refusing_the_request_is_not_retried() -> None:
    calls: list[int] = []
    res = ev({"kind": "judge", "question": "ok?"}, "hi", judge=busy_then("yes", calls, 400))
    assert res.status == "error" and "HTTP 400" in res.message
    assert len(calls) == 1
