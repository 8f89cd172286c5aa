"""A usual result's line, read straight from its models (convlab.model._fastline), is byte
for byte the line the general path writes from pydantic's dump.

Every example suite's results, results generated with hypothesis (plain values, odd
timings, long and unicode replies, derived and agent-given ids, failed and errored checks,
checkpoints, usage) and results that only the general path may write are encoded both ways.
The models' fields are listed here as the fast path reads them: a field added to a model
fails the test until the fast path writes it too.
"""

from __future__ import annotations

import math
import warnings
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convlab.model._codec as codec
from convlab.model._codec import encode
from convlab.model._fastline import usual_line
from convlab.model._ids import case_thread, trace_of, turn_id_of
from convlab.model.conversation import Message, Observation, ToolCall, Usage
from convlab.model.records import row_counts
from convlab.model.results import AssertionResult, CaseResult, CheckpointResult, TurnResult
from tests.test_codec import _example_results, _odd_result

FIELDS = {
    CaseResult: "case_id variant repetition run status reward turns assertions checkpoints error "
    "code blame duration_ms attempts usage started_at finish_reason metadata",
    TurnResult: "index step_id variant input messages observation assertions status duration_ms "
    "error code",
    Observation: "text data tool_calls messages status interaction facts effects usage "
    "latency_ms error outcome truncated_from thread_id turn_id trace_id replayed events",
    AssertionResult: "kind id label status message expected actual error blame score "
    "duration_ms children details",
    Message: "role content name tool_call_id tool_calls",
    Usage: "prompt_tokens completion_tokens total_tokens",
    CheckpointResult: "id reached reached_at_turn required passed message",
}


@pytest.mark.parametrize("model", list(FIELDS))
def test_the_fast_path_reads_every_field_of_the_models(model: Any) -> None:
    assert list(model.model_fields) == FIELDS[model].split(), (
        f"{model.__name__}'s fields changed: write the new ones in convlab/model/_fastline.py "
        "(or make it hand such results to the general path), then list them here"
    )


def _both(result: CaseResult, thread: tuple[str, int] | None = None) -> tuple[bytes, bytes, bool]:
    """(the line, the general path's line, whether the fast path wrote the first)."""
    taken = usual_line(result, _shared(result)) is not None
    fast = encode(result, thread)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(codec, "usual_line", lambda *_: None)
        general = encode(result, thread)
    return fast, general, taken


def _shared(result: CaseResult) -> str | None:
    threads = {t.observation.thread_id for t in result.turns if t.observation is not None}
    return threads.pop() if len(threads) == 1 else None


def test_every_example_result_is_written_the_same_and_most_take_the_fast_path() -> None:
    results = _example_results()
    taken = 0
    for r in results:
        fast, general, took = _both(r)
        assert fast == general, r.case_id
        taken += took
        if took:
            made = usual_line(r, _shared(r))
            assert made is not None and made[1] == list(row_counts(r))
    assert taken >= len(results) // 3, f"only {taken} of {len(results)} took the fast path"


def test_rich_and_odd_results_are_written_the_same() -> None:
    """Tool calls, data, a world, extra message keys, details, children, NaN, sets..."""
    base = _result(text="ok")
    changes = [
        lambda r: r.metadata.update(x={"nested": [1, None]}),
        lambda r: setattr(r.turns[0].observation, "data", {"a": (1, 2)}),
        lambda r: r.turns[0].observation.tool_calls.append(ToolCall("f", {"q": 1}, result=[1])),
        lambda r: setattr(r.turns[0].observation, "effects", {"world": {1, 2}}),
        lambda r: setattr(r.turns[0].observation, "interaction", {"options": ["a"]}),
        lambda r: r.turns[0].observation.facts.append({"fact": 1}),
        lambda r: r.turns[0].observation.events.append({"event": "x"}),
        lambda r: r.turns[0].assertions[0].details.update(k=[1, {"x": math.nan}]),
        lambda r: setattr(r.turns[0].assertions[0], "expected", ["a", "list"]),
        lambda r: setattr(r.turns[0].assertions[0], "actual", {"one"}),
        lambda r: (
            r.turns[0]
            .assertions[0]
            .children.append(
                AssertionResult(kind="contains", status="failed", actual="ok", duration_ms=0.5)
            )
        ),
        lambda r: setattr(r.turns[0].messages[0], "content", [{"type": "text", "text": "x"}]),
        lambda r: r.turns[0].messages[0].__pydantic_extra__.update(refusal="no"),
    ]
    for r in [_odd_result(), *[_changed(base, change) for change in changes]]:
        fast, general, taken = _both(r, ("run1", 0))
        assert taken and fast == general


def _changed(base: CaseResult, change: Any) -> CaseResult:
    r = base.model_copy(deep=True)
    change(r)
    return r


def test_a_field_holding_a_value_of_another_type_goes_to_the_general_path() -> None:
    """Fields set without validation may hold anything: pydantic's dump says how it is
    written (with a warning), never a guess of the fast path."""
    for change in (
        lambda r: setattr(r, "duration_ms", Decimal("1.5")),
        lambda r: setattr(r.turns[0].assertions[0], "kind", 1),
        lambda r: setattr(r.turns[0].observation, "text", b"bytes"),
    ):
        r = _changed(_result(text="ok"), change)
        assert usual_line(r, _shared(r)) is None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pydantic's serializer warns of the odd type
            fast, general, _ = _both(r)
        assert fast == general


def test_the_engine_shaped_result_takes_the_fast_path_and_writes_the_same_line() -> None:
    r = _result(text="ok")
    fast, general, taken = _both(r, ("run1", 0))
    assert taken and fast == general
    assert b'"_th":["run1",0]' in fast and b'"_o":7' in fast


def _result(
    text: str | None = "ok",
    *,
    status: str = "passed",
    derived: bool = True,
    durations: tuple[float, float, float] = (0.1234567, 1.5, 0.0002),
    messages: list[Message] | None = None,
    checks: list[AssertionResult] | None = None,
    effects: dict[str, Any] | None = None,
    step_id: str | None = None,
    usage: Usage | None = None,
    variant: dict[str, str] | None = None,
) -> CaseResult:
    variant = variant or {}
    thread = case_thread("run1", "c1", tuple(variant.items()), 0)
    turn_id = turn_id_of(thread, step_id or "0") if derived else "agent-turn"
    obs = Observation(
        text=text,
        messages=[Message(role="assistant", content=text)] if messages is None else messages,
        status="completed",
        facts=[],
        events=[],
        effects={} if effects is None else effects,
        latency_ms=durations[0],
        thread_id=thread,
        turn_id=turn_id,
        trace_id=trace_of(turn_id) if derived else "agent-trace",
        usage=usage,
    )
    if checks is None:
        checks = [
            AssertionResult(kind="contains", message="has ok", expected="ok", actual=text),
            AssertionResult(kind="regex", message="matches", expected=r"\w+", actual=text),
        ]
    turn = TurnResult(
        index=0,
        step_id=step_id,
        messages=[Message(content="hi")],
        observation=obs,
        assertions=checks,
        status="passed" if status == "passed" else "failed",
        duration_ms=durations[1],
    )
    return CaseResult(
        case_id="c1",
        variant=variant,
        status=status,
        reward=1.0 if status == "passed" else 0.0,
        turns=[turn],
        duration_ms=durations[2],
        started_at="2026-12-01T00:00:00.000+00:00",
    )


scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=False, width=32),
    st.text(max_size=8),
)
plain = (
    scalar | st.lists(scalar, max_size=2) | st.dictionaries(st.text(max_size=3), scalar, max_size=2)
)
timing = st.one_of(
    st.just(0.0), st.just(-0.0), st.floats(-1, 1e6, allow_nan=False), st.just(math.nan)
)
texts = st.one_of(st.none(), st.text(max_size=12), st.text(min_size=256, max_size=300))


@st.composite
def check(draw: st.DrawFn, reply: str | None) -> AssertionResult:
    status = draw(st.sampled_from(["passed", "failed", "error", "skipped"]))
    return AssertionResult(
        kind=draw(st.sampled_from(["contains", "regex", "equals"])),
        id=draw(st.none() | st.text(max_size=3)),
        label=draw(st.none() | st.just("label")),
        status=status,
        message=draw(st.text(max_size=6)),
        expected=draw(plain),
        actual=draw(st.just(reply) | plain),
        error="broke" if status == "error" else None,
        blame=draw(st.sampled_from([None, "suite", "judge"])) if status == "error" else None,
        score=draw(st.none() | st.floats(0, 1)),
        duration_ms=draw(timing),
    )


@st.composite
def results(draw: st.DrawFn) -> CaseResult:
    text = draw(texts)
    shape = draw(st.sampled_from(["reply", "none", "named", "two", "long"]))
    messages = {
        "reply": None,
        "none": [],
        "named": [Message(role="assistant", content=text, name="bot")],
        "two": [
            Message(role="assistant", content="first"),
            Message(role="assistant", content=text),
        ],
        "long": [
            Message(role="tool", content="x", tool_call_id="1"),
            Message(role="assistant", content=text),
        ],
    }[shape]
    r = _result(
        text,
        status=draw(st.sampled_from(["passed", "failed", "error", "timeout"])),
        derived=draw(st.booleans()),
        durations=(draw(timing), draw(timing), draw(timing)),
        messages=messages,
        checks=draw(st.lists(check(text), max_size=4)),
        effects=draw(st.sampled_from([None, {}])),
        step_id=draw(st.none() | st.just("step-1")),
        usage=draw(st.none() | st.just(Usage(prompt_tokens=2, total_tokens=2))),
        variant=draw(st.sampled_from([{}, {"s": "v"}])),
    )
    if draw(st.booleans()):
        r.turns[0].observation.effects = None
    if draw(st.booleans()):
        r.checkpoints = [CheckpointResult(id="cp", reached=draw(st.booleans()))]
    r.repetition, r.run, r.attempts = (
        draw(st.integers(0, 2)),
        draw(st.integers(0, 2)),
        draw(st.integers(1, 3)),
    )
    r.error = draw(st.none() | st.text(max_size=5))
    r.turns[0].index = draw(st.sampled_from([0, 3]))
    obs = r.turns[0].observation
    if draw(st.booleans()):
        obs.data = draw(plain)
    if draw(st.booleans()):
        obs.tool_calls = [
            ToolCall("f", draw(plain), result=draw(plain), id=draw(st.none() | st.just("1")))
        ]
    if draw(st.booleans()):
        r.metadata = draw(st.dictionaries(st.text(max_size=3), plain, max_size=2))
    if draw(st.booleans()):
        obs.effects = draw(st.dictionaries(st.text(max_size=3), plain, max_size=2))
    return r


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results(), st.sampled_from([None, ("run1", 0), ("other", 1)]))
def test_generated_results_are_written_the_same_both_ways(r: CaseResult, thread: Any) -> None:
    fast, general, taken = _both(r, thread)
    assert taken
    assert fast == general
