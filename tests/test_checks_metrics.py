"""HoloDeck metrics (§2.5): equality/numeric matrix, every option, response_path, skip rules,
the overlap metrics, and the judged metrics (through a function judge)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from convlab.agents.protocol import as_agent
from convlab.checks import CheckContext, evaluate
from convlab.checks._textmetrics import bleu, meteor, rouge
from convlab.checks.metrics import graded_text, parse_number
from convlab.model.assertions import parse_assertion
from convlab.model.conversation import Message
from convlab.model.records import AssertionResult, Observation
from convlab.model.suite import Case, Turn, TurnInput


def metric(
    name: str, response: str, truth: str | None, *, kind: str = "standard", **opts: Any
) -> dict[str, Any]:
    threshold = opts.pop("threshold", None)
    path = opts.pop("response_path", None)
    skip = opts.pop("skip", False)
    spec: dict[str, Any] = {"kind": "metric", "type": kind, "metric": name, "options": opts}
    spec.update(ground_truth=truth, threshold=threshold, response_path=path)
    spec["skip_without_ground_truth"] = skip
    return spec


def ev(spec: dict[str, Any], response: str, **ctx: Any) -> AssertionResult:
    obs = Observation(text=response)
    return asyncio.run(evaluate(parse_assertion(spec), CheckContext(observation=obs, **ctx)))


def run(name: str, response: str, truth: str | None, **opts: Any) -> AssertionResult:
    return ev(metric(name, response, truth, **opts), response)


# ---------------------------------------------------------------- 15-row acceptance matrix (SC-008)

MATRIX: list[tuple[str, dict[str, Any], str, str, bool]] = [
    ("equality", {}, "hello", "hello", True),
    ("equality", {}, "Hello", "hello", False),
    ("equality", {"case_insensitive": True}, "Hello", "hello", True),
    ("equality", {"strip_whitespace": True}, " a b ", "a b", True),
    ("equality", {"strip_punctuation": True}, "yes.", "yes", True),
    ("numeric", {}, "1", "1.0", True),
    ("numeric", {"accept_percent": True, "absolute_tolerance": 1e-3}, "50%", "0.5", True),
    ("numeric", {"accept_thousands_separators": True}, "1,000", "1000", True),
    ("numeric", {"absolute_tolerance": 0.01}, "1.02", "1", False),
    ("numeric", {"relative_tolerance": 0.1}, "110", "100", True),
    ("numeric", {"absolute_tolerance": 0.5}, "1.4", "1", True),
    ("numeric", {}, "50%", "0.5", False),
    ("numeric", {"absolute_tolerance": 0.25}, "0.5", "0.25", True),  # inclusive boundary
    ("numeric", {}, "n/a", "5", False),
    ("numeric", {}, "25587", "25587", True),
]


@pytest.mark.parametrize(("name", "opts", "response", "truth", "passed"), MATRIX)
def test_acceptance_matrix(
    name: str, opts: dict[str, Any], response: str, truth: str, passed: bool
) -> None:
    res = run(name, response, truth, **opts)
    assert res.passed is passed
    assert res.score == (1.0 if passed else 0.0)


@pytest.mark.parametrize(
    ("opts", "response", "truth", "passed"),
    [
        ({}, "Yes", "yes", False),  # strict default
        ({"case_insensitive": True}, "Yes", "yes.", False),
        ({"case_insensitive": True, "strip_punctuation": True}, "Yes", "yes.", True),
        ({"strip_whitespace": True}, " hello  world ", "hello world", True),
        ({"strip_whitespace": True}, "hello\n\tworld", "hello world", True),
        ({"case_insensitive": True}, "STRASSE", "straße", True),  # casefold, not lower
    ],
)
def test_equality_options(opts: dict[str, Any], response: str, truth: str, passed: bool) -> None:
    assert run("equality", response, truth, **opts).passed is passed


@pytest.mark.parametrize(
    ("opts", "response", "truth", "passed"),
    [
        ({}, "1.0000001", "1", True),  # within 1e-6
        ({}, "1.1", "1", False),
        ({}, "1.000001", "1", True),  # boundary inclusive
        ({"absolute_tolerance": 0.001}, "0.15", "0.14136", False),
        ({"absolute_tolerance": 0.01}, "0.142", "0.14136", True),
        ({"relative_tolerance": 0.01}, "100.5", "100", True),
        ({"absolute_tolerance": 0.01, "accept_percent": True}, "14.14%", "0.14136", True),
        ({"accept_thousands_separators": True}, "206,588", "206588", True),
        ({"accept_thousands_separators": True}, "206_588", "206588", True),
        ({"accept_thousands_separators": True}, "206\u202f588", "206588", True),
        (
            {"accept_thousands_separators": True},
            "206 588",
            "206588",
            False,
        ),  # space is no separator
        ({}, "206,588", "206588", False),
        ({}, "  42 ", "42", True),
    ],
)
def test_numeric_options(opts: dict[str, Any], response: str, truth: str, passed: bool) -> None:
    assert run("numeric", response, truth, **opts).passed is passed


def test_numeric_failure_messages_say_why() -> None:
    far = run("numeric", "1.1", "1")
    assert far.message == "numeric: expected 1, got 1.1 (difference 0.1 > absolute 1e-06)"
    assert (far.expected, far.actual) == ("1", "1.1")
    pct = run("numeric", "14.14%", "0.14136", absolute_tolerance=0.01)
    assert pct.status == "failed" and "accept_percent" in pct.message
    sep = run("numeric", "206,588", "206588")
    assert "thousands separator" in sep.message
    junk = run("numeric", "abc", "5")
    assert "could not parse 'abc'" in junk.message and junk.score == 0.0


def test_parse_number() -> None:
    assert parse_number("50%", percent=True, thousands=False) == (0.5, None)
    assert parse_number("", percent=False, thousands=False) == (None, "value is empty")


def test_equality_failure_message() -> None:
    res = run("equality", "Yes", "yes")
    assert res.message == 'equality: expected "yes", got "Yes"'


def test_threshold_overrides_the_evaluator_verdict() -> None:
    assert run("equality", "a", "b", threshold=0.0).passed
    assert not run("numeric", "1", "1", threshold=1.5).passed


# ---------------------------------------------------------------- response_path


REPLY = json.dumps({"answer": {"value": 25587, "steps": [1, 2]}, "ok": True, "pct": "14.1%"})


@pytest.mark.parametrize(
    ("path", "text", "problem"),
    [
        ("answer.value", "25587", None),
        ("answer.steps[1]", "2", None),
        ("ok", "True", None),  # the scalar leaf graded as str(leaf)
        ("answer.missing", None, "key 'missing' not found"),
        ("answer.steps[5]", None, "no item [5]"),
        ("answer", None, "leads to an object"),
        ("answer.steps", None, "leads to an array"),
    ],
)
def test_graded_text(path: str, text: str | None, problem: str | None) -> None:
    got, why = graded_text(REPLY, path)
    assert got == text
    assert (why is None) if problem is None else (why is not None and problem in why)


def test_response_path_grades_one_value() -> None:
    assert run("numeric", REPLY, "25587", response_path="answer.value").passed
    res = run("equality", "not json", "x", response_path="a")
    assert not res.passed and "is not a JSON document" in res.message


# ---------------------------------------------------------------- skip rules


def test_multi_turn_skips_metrics_without_ground_truth_and_on_empty_replies() -> None:
    res = ev(metric("equality", "x", None, skip=True), "x")
    assert res.status == "skipped" and "no ground_truth" in res.message
    empty = ev(metric("equality", "", "x", skip=True), "")
    assert empty.status == "skipped" and "empty" in empty.message
    assert ev(metric("equality", "x", "x", skip=True), "x").passed


def test_single_turn_fails_a_metric_without_ground_truth() -> None:
    res = run("equality", "x", None)
    assert res.status == "failed" and "needs a ground_truth" in res.message


def test_ground_truth_comes_from_the_scripted_turn() -> None:
    case = Case(
        id="c",
        mode="turns",
        turns=[
            Turn(input=TurnInput(text="q1")),
            Turn(input=TurnInput(text="q2"), ground_truth="42"),
        ],
    )
    spec = metric("numeric", "42", None, skip=True)
    assert ev(spec, "42.0", case=case, turn_index=1, multi_turn=True).passed
    assert ev(spec, "42.0", case=case, turn_index=0, multi_turn=True).status == "skipped"


def test_metrics_needing_retrieval_context() -> None:
    spec = metric("faithfulness", "x", None, kind="rag", skip=True)
    assert ev(spec, "x").status == "skipped"
    single = ev(metric("groundedness", "x", None), "x", judge=as_agent(lambda m: "1"))
    assert single.status == "failed" and "needs a retrieval_context" in single.message


# ---------------------------------------------------------------- overlap metrics


def test_overlap_metrics_are_bounded_and_ordered() -> None:
    ref = "the cat sat on the mat"
    assert bleu(ref, ref) == pytest.approx(1.0) and rouge(ref, ref) == pytest.approx(1.0)
    assert meteor(ref, ref) == pytest.approx(1 - 0.5 * (1 / 6) ** 3)  # one chunk of 6 words
    for fn in (bleu, meteor, rouge):
        assert fn("dogs bark loudly", ref) == 0.0
        assert 0.0 < fn("the cat sat on a mat", ref) < 1.0
    assert rouge("the cat", ref, "rouge1") == pytest.approx(2 * (1.0 * 2 / 6) / (1.0 + 2 / 6))
    assert rouge("cat the", ref, "rouge2") == 0.0
    assert meteor("mat the on sat cat the", ref) < meteor(ref, ref)


def test_overlap_metric_as_a_check() -> None:
    res = run("bleu", "the cat sat on the mat", "the cat sat on the mat")
    assert res.passed and res.score == pytest.approx(1.0)
    low = run("rouge", "a b c", "x y z", threshold=0.5)
    assert not low.passed and low.message.startswith("rouge score 0.000")
    bad = run("rouge", "a", "a", variant="rouge9")
    assert bad.status == "error" and "unknown ROUGE variant" in bad.message


# ---------------------------------------------------------------- judged metrics


def judge_saying(answer: str, seen: list[str] | None = None) -> Any:
    def fn(messages: list[dict[str, Any]]) -> str:
        if seen is not None:
            seen.append(messages[-1]["content"])
        return answer

    return as_agent(fn)


def test_judged_metric_without_a_judge_is_an_error_that_says_how() -> None:
    res = run("coherence", "text", None)
    assert res.status == "error" and "run(..., judge=...)" in res.message


def test_judged_metric_scores_through_the_judge() -> None:
    seen: list[str] = []
    spec = metric("relevance", "Paris", None)
    res = ev(
        spec,
        "Paris",
        judge=judge_saying('{"score": 0.9, "reason": "on topic"}', seen),
        messages=[Message(role="user", content="Capital of France?")],
    )
    assert res.passed and res.score == 0.9 and "on topic" in res.message
    assert res.details["judge_answer"] == '{"score": 0.9, "reason": "on topic"}'
    assert "Capital of France?" in seen[0] and "Paris" in seen[0]
    low = ev(spec, "Paris", judge=judge_saying('{"score": 0.2}'))
    assert not low.passed and low.expected == ">= 0.5"


def test_geval_uses_criteria_and_threshold() -> None:
    seen: list[str] = []
    spec = metric("Polite", "hi", None, kind="geval", criteria="The reply is polite", threshold=0.8)
    res = ev(spec, "hi", judge=judge_saying("0.7", seen))
    assert not res.passed and res.score == 0.7
    assert "The reply is polite" in seen[0]
    missing = ev(metric("G", "hi", None, kind="geval"), "hi", judge=judge_saying("1"))
    assert missing.status == "error" and "criteria" in missing.message


def test_unreadable_judge_score_is_an_error() -> None:
    res = ev(metric("fluency", "x", None), "x", judge=judge_saying("excellent!"))
    assert res.status == "error" and "no score in 0..1" in res.message
    res = ev(metric("fluency", "x", None), "x", judge=judge_saying('{"score": 7}'))
    assert res.status == "error"
