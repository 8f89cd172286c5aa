"""A result's line, read straight from its models (convlab.model._fastline), is byte for
byte the line made from pydantic's `model_dump(exclude_defaults=True)` of the whole result,
reshaped as the codec did before (`_reference` below: the codec's former general path).

Every example suite's results, results generated with hypothesis (plain values, odd
timings, long and unicode replies, derived and agent-given ids, failed and errored checks,
checkpoints, usage), rich ones (tool calls, data, a world, details, children) and fields
holding a value of another type are encoded both ways. The models' fields are listed here
as the fast path reads them: a field added to a model fails the test until it is written.
"""

from __future__ import annotations

import math
import warnings
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import to_jsonable_python

from convlab.model._codec import encode
from convlab.model._fastline import line_of
from convlab.model._ids import case_thread, trace_of, turn_id_of
from convlab.model.conversation import Message, Observation, ToolCall, Usage
from convlab.model.records import row_counts, why_not_passed
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
        "then list them here"
    )


def _both(result: CaseResult, thread: tuple[str, int] | None = None) -> tuple[bytes, bytes]:
    """(the line, the reference line from pydantic's dump)."""
    return encode(result, thread), _reference(result, thread)


def _reference(result: CaseResult, thread: tuple[str, int] | None) -> bytes:
    """The line as the codec made it from pydantic's dump of the whole result, reshaped."""
    shared = _shared(result)
    plain = result.model_dump(exclude_defaults=True)
    _round(plain, "duration_ms")
    if "assertions" in plain:
        plain["assertions"] = _packed(plain["assertions"], None)
    for i, (turn, out) in enumerate(zip(result.turns, plain.get("turns", ()), strict=True)):
        _round(out, "duration_ms")
        obs = turn.observation
        if "assertions" in out:
            out["assertions"] = _packed(out["assertions"], obs.text if obs is not None else None)
        if "observation" in out:
            _round(out["observation"], "latency_ms")
            _observation(turn, out["observation"], shared)
        if out.get("index") == i:
            del out["index"]
    if shared is not None:
        made = thread and case_thread(
            thread[0], result.case_id, tuple(result.variant.items()), thread[1]
        )
        plain["_th"] = [*thread] if thread and shared == made else shared
    hint: list[Any] = [*row_counts(result)]
    why = why_not_passed(result)
    if why:
        hint.append(why)
    else:
        while len(hint) > 1 and hint[-1] == 0:
            hint.pop()
    plain["_r"] = hint
    return orjson.dumps(plain, default=to_jsonable_python, option=orjson.OPT_NON_STR_KEYS)


def _round(plain: dict[str, Any], key: str) -> None:
    value = plain.get(key)
    if type(value) is float and value >= 0:
        plain[key] = int(value * 1000 + 0.5) / 1000


def _packed(checks: list[dict[str, Any]], reply: str | None) -> list[list[Any]]:
    out: list[list[Any]] = []
    for check in checks:
        duration = check.pop("duration_ms", 0.0)
        if type(duration) is float and duration >= 0:
            duration = int(duration * 1000 + 0.5) / 1000
        item = [check.pop("kind"), check.pop("message", ""), check.pop("expected", None)]
        actual = check.pop("actual", None)
        if reply is None or type(actual) is not str or actual != reply:
            item.append(actual)
        item.append(duration)
        if check:
            if "children" in check:
                check["children"] = _packed(check["children"], reply)
            item.append(check)
        out.append(item)
    return out


def _observation(turn: TurnResult, plain: dict[str, Any], thread: str | None) -> None:
    obs = turn.observation
    assert obs is not None
    flags, text, messages = 0, obs.text, obs.messages
    reply = messages[0] if len(messages) == 1 else None
    if (
        isinstance(text, str)
        and reply is not None
        and (reply.role, reply.content, reply.name, reply.tool_call_id, reply.tool_calls)
        == ("assistant", text, None, None, None)
        and not reply.__pydantic_extra__
    ):
        del plain["messages"]
        flags = 1
    elif text is not None and len(text) >= 256:
        for index, message in enumerate(messages):
            if message.content == text:
                del plain["text"]
                plain["text_in"] = index
                break
    if thread is not None and obs.thread_id == thread:
        del plain["thread_id"]
    step = turn.step_id or str(turn.index)
    if (
        obs.thread_id
        and obs.turn_id == turn_id_of(obs.thread_id, step)
        and obs.trace_id == trace_of(obs.turn_id)
    ):
        del plain["turn_id"], plain["trace_id"]
        flags |= 2
    if obs.effects == {} and type(obs.effects) is dict:
        del plain["effects"]
        flags |= 4
    if flags:
        plain["_o"] = flags


def _shared(result: CaseResult) -> str | None:
    threads = {t.observation.thread_id for t in result.turns if t.observation is not None}
    return threads.pop() if len(threads) == 1 else None


def test_every_example_result_is_written_the_same() -> None:
    results = _example_results()
    assert len(results) > 20
    for r in results:
        fast, general = _both(r)
        assert fast == general, r.case_id
        assert line_of(r, _shared(r))[1] == list(row_counts(r))


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
        fast, general = _both(r, ("run1", 0))
        assert fast == general


def _changed(base: CaseResult, change: Any) -> CaseResult:
    r = base.model_copy(deep=True)
    change(r)
    return r


def test_a_field_holding_a_value_of_another_type_is_written_as_pydantics_dump_writes_it() -> None:
    """Fields set without validation may hold anything: pydantic's serializer says how it is
    written (its dump warns), never a guess of the fast path."""
    for change in (
        lambda r: setattr(r, "duration_ms", Decimal("1.5")),
        lambda r: setattr(r.turns[0].assertions[0], "kind", 1),
        lambda r: setattr(r.turns[0].observation, "text", b"bytes"),
    ):
        r = _changed(_result(text="ok"), change)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pydantic's serializer warns of the odd type
            fast, general = _both(r)
        assert fast == general


def test_the_engine_shaped_result_writes_the_same_line() -> None:
    r = _result(text="ok")
    fast, general = _both(r, ("run1", 0))
    assert fast == general
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
    fast, general = _both(r, thread)
    assert fast == general
