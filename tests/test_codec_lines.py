"""The store line's format: small for the common case, exact for every case, and readable
across versions.

Lines written by earlier versions (tests/data/codec/old_lines.jsonl, written by 7e95fe5's
encoder: assertion results as dicts, `_m`/`_d` flags) decode to the models they decoded to
then (old_models.jsonl). The current form (assertion results as arrays, a turn's reply not
repeated as each check's `actual`, one observation flag) gives back every value pydantic's
own JSON gives back, odd ones included; a passed single-turn case with 3 checks fits in
500 bytes (issue 13). `Results`, which holds the lines of a run in one buffer, behaves as a
list when it is changed.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_codec import _pydantic_round_trip, _same

import convlab as cl
from convlab.engine.store import RESULT_PREFIX, read_store
from convlab.model._codec import decode, encode, row_of_line
from convlab.model.conversation import Message, Observation
from convlab.model.records import Results, instance_row
from convlab.model.results import AssertionResult, CaseResult, TurnResult

DATA = Path(__file__).resolve().parent / "data" / "codec"


def _old_lines() -> list[bytes]:
    return (DATA / "old_lines.jsonl").read_bytes().splitlines()


def _compact(stored: bytes) -> bytes:
    """A store line without its `"type":"result"` prefix: the line `encode` made."""
    assert stored.startswith(RESULT_PREFIX)
    return b"{" + stored[len(RESULT_PREFIX) :]


def test_store_lines_of_an_earlier_version_decode_to_the_same_models() -> None:
    lines = _old_lines()
    models = [json.loads(m) for m in (DATA / "old_models.jsonl").read_text().splitlines()]
    assert len(lines) == len(models) > 10
    old = b"".join(lines)
    assert b'"_m":1' in old and b'"_d":1' in old and b'"kind":' in old and b'"_o"' not in old
    for stored, model in zip(lines, models, strict=True):
        line = _compact(stored)
        back = decode(line)
        assert json.loads(back.model_dump_json()) == model, back.case_id
        assert row_of_line(orjson.loads(line), line) == instance_row(back)


def test_a_store_of_an_earlier_version_loads_and_resumes_as_it_did(tmp_path: Path) -> None:
    models = [json.loads(m) for m in (DATA / "old_models.jsonl").read_text().splitlines()]
    store = tmp_path / "old.jsonl"
    store.write_bytes((DATA / "old_lines.jsonl").read_bytes())
    run = cl.load_run(store)
    assert [json.loads(r.model_dump_json()) for r in run.results] == models
    # the passed case whose reward a python test made 0.0 keeps it (0.0 is left out)
    assert [r["reward"] for r in models if r["status"] == "passed"].count(0.0) == 1
    from_models = cl.Run(results=[CaseResult.model_validate(m) for m in models])
    assert run.df.equals(from_models.df)  # rows read from the lines' hints
    _, results = read_store(store)
    assert [json.loads(r.model_dump_json()) for r in results] == models


def _bench_suite(n: int) -> cl.Suite:
    """benchmarks/bench_engine.py's suite: single-turn cases with 3 checks each."""
    specs: list[dict[str, Any]] = [
        {"kind": "contains", "value": "ok"},
        {"kind": "regex", "pattern": r"\w+"},
        {"kind": "not_contains", "value": "error"},
    ]
    return cl.Suite(
        id="bench",
        cases=[
            cl.Case(id=f"c{i}", input=[Message(content=f"message {i}")], assertions=specs)
            for i in range(n)
        ],
    )


def test_a_passed_single_turn_case_with_3_checks_is_stored_in_at_most_500_bytes(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.jsonl"

    async def agent(messages: list[Message]) -> str:
        return "ok"

    run = cl.run(_bench_suite(3), agent, runs=2, store=store, progress=False)
    lines = [x for x in store.read_bytes().splitlines(keepends=True) if b'"type":"result"' in x]
    assert len(lines) == 6 and all(b'"status":"passed"' in line for line in lines)
    assert max(map(len, lines)) <= 500, lines[0]
    # the checks are arrays and the reply is written once: 3 checks read "ok"
    assert b'"kind"' not in lines[0] and lines[0].count(b'"ok"') == 2  # reply and expected
    back = cl.load_run(store)
    assert back.results == run.results
    check = back.results[0].turns[0].assertions[0]
    assert (check.kind, check.actual, check.expected) == ("contains", "ok", "ok")


def _check(**fields: Any) -> AssertionResult:
    return AssertionResult(**{"kind": "contains", **fields})


def _case(reply: str | None, checks: list[AssertionResult], **obs: Any) -> CaseResult:
    observation = Observation(text=reply, messages=[Message(role="assistant", content=reply)])
    if obs:
        observation = observation.model_copy(update=obs)
    turn = TurnResult(
        index=0, messages=[Message(content="hi")], observation=observation, assertions=checks
    )
    return CaseResult(case_id="c", status="failed", turns=[turn], assertions=checks[:2])


def _round_trips(r: CaseResult) -> CaseResult:
    line = encode(r)
    back = decode(line)
    _same(back, _pydantic_round_trip(r))
    assert row_of_line(orjson.loads(line), line) == instance_row(back)
    return back


def test_odd_check_values_round_trip_in_the_array_form() -> None:
    long = "ünïcödé “quotes” \u2028 and a line\n" * 30  # stored once, as a message's text
    for reply in ("ok", "", long, "1", None):
        checks = [
            _check(actual=reply, expected=reply, duration_ms=0.0104),
            _check(actual=1, expected=math.nan, message=""),  # not the reply "1": an int
            _check(actual=None, expected=None),  # None as given: the default
            _check(actual="", expected="", message="empty strings are values"),
            _check(actual=[reply], expected={"1": False, "x": 0.0}, duration_ms=0.0004),
            _check(
                kind="all",
                id="a1",
                label="both",
                status="failed",
                message="one failed",
                actual=reply,
                score=math.nan,
                error=None,
                details={"k": [None, {"n": 1}]},
                children=[
                    _check(actual=reply, status="failed", blame="suite", error="bad"),
                    _check(actual=0, status="skipped"),
                ],
            ),
        ]
        back = _round_trips(_case(reply, checks))
        assert back.turns[0].assertions[0].actual == reply
        assert back.turns[0].assertions[5].children[0].actual == reply
        assert back.assertions[0].actual == reply  # case scope: written out, not the reply's


def test_the_reply_is_written_once_however_many_checks_read_it() -> None:
    reply = "a reply of some length, " * 12
    line = encode(_case(reply, [_check(actual=reply, expected="x") for _ in range(5)]))
    # once as the text, twice for the 2 case-scope checks (they have no turn to point to)
    assert line.count(reply.encode()) == 3


def test_observation_flags_keep_effects_ids_and_messages_apart() -> None:
    for effects in ({}, {"a": 1}, None):
        back = _round_trips(_case("ok", [_check(actual="ok")], effects=effects))
        assert back.turns[0].observation is not None
        assert back.turns[0].observation.effects == effects
    r = _case("ok", [], effects={})
    r.turns[0].observation.messages.append(Message(role="tool", content="{}"))  # type: ignore[union-attr]
    line = encode(r)
    assert b'"_o":4' in line and b'"role":"tool"' in line
    _round_trips(r)


_finite = st.floats(allow_nan=False, allow_infinity=False)
"""NaN and infinity are JSON's null, in pydantic's JSON as in the line (the odd-values test
has them); a row's `error` would say `expected nan` where the decoded model says None."""
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _finite | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def _checks(draw: st.DrawFn, reply: str | None, depth: int = 0) -> AssertionResult:
    actual = draw(st.sampled_from([reply, reply]) | _values)
    extra: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "id": st.text(max_size=3),
                "label": st.text(max_size=3),
                "status": st.sampled_from(["passed", "failed", "error", "skipped"]),
                "error": st.text(max_size=3),
                "blame": st.sampled_from(["judge", "suite", "infrastructure", None]),
                "score": _finite,
                "details": st.dictionaries(st.text(max_size=3), _values, max_size=2),
            },
        )
    )
    if depth < 2 and draw(st.booleans()):
        extra["children"] = draw(st.lists(_checks(reply, depth + 1), max_size=2))
    return AssertionResult(
        kind=draw(st.sampled_from(["contains", "regex", "custom", ""])),
        message=draw(st.text(max_size=6)),
        expected=draw(_values),
        actual=actual,
        duration_ms=draw(st.floats(0, 1e6) | st.just(0.0)),
        **extra,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), reply=st.none() | st.text(max_size=12))
def test_random_check_results_round_trip(data: st.DataObject, reply: str | None) -> None:
    checks = data.draw(st.lists(_checks(reply), max_size=4))
    _round_trips(_case(reply, checks))


def test_results_held_as_lines_behave_as_a_list_when_changed() -> None:
    """`Results` keeps lines end to end in one buffer: reading, replacing, inserting and
    deleting items keep each result, its row and its line together."""
    made = [_case(f"reply {i}", [_check(actual=f"reply {i}")]) for i in range(6)]
    for i, r in enumerate(made):
        r.case_id = f"c{i}"
    results = Results()
    for r in made:
        results.add(r.status, encode(r))
    assert results == made and [row[0] for row in results.rows()] == [f"c{i}" for i in range(6)]
    first = results[1]  # read: held as its model from now on
    first.case_id = "changed"
    results[2] = made[0]
    results.insert(0, made[5])
    del results[4:6]  # c3, c4
    want = ["c5", "c0", "changed", "c0", "c5"]
    assert [r.case_id for r in results] == want
    assert [row[0] for row in results.rows()] == want
    assert results[1] is results[1] and results[2] is first
    assert all(line is None for line in results.lines())  # every one was read
    fresh = Results()
    for r in made:
        fresh.add(r.status, encode(r))
    del fresh[::2]
    assert [decode(line).case_id for line in fresh.lines() if line] == ["c1", "c3", "c5"]
    assert [row[0] for row in fresh.rows()] == ["c1", "c3", "c5"]
    assert pickle.loads(pickle.dumps(fresh)) == [made[1], made[3], made[5]]


def test_a_mangled_line_is_a_clear_error_naming_its_line_and_field(tmp_path: Path) -> None:
    good = orjson.loads(encode(_case("ok", [_check(actual="ok", expected="ok")])))
    assert good["turns"][0]["assertions"] == [["contains", "", "ok", 0.0]]
    mangled: list[tuple[Any, str]] = [
        ([[]], "turns[0].assertions[0]"),
        ([["contains"]], "turns[0].assertions[0]"),
        ([["contains", "m", "ok", 1, 2, 3]], "turns[0].assertions[0]"),
        ([["contains", "m", "ok", 1, {"status": "nope"}]], "turns[0].assertions[0].status"),
        ("no", "turns[0].assertions"),
    ]
    path = tmp_path / "bad.jsonl"
    for bad, field in mangled:
        data = {**good, "turns": [{**good["turns"][0], "assertions": bad}]}
        # "type" last: not the store's prefix, so the line is read and checked at once
        path.write_bytes(orjson.dumps({**data, "type": "result"}) + b"\n")
        with pytest.raises(cl.SuiteError) as info:
            cl.load_run(path)
        assert f"bad.jsonl:1: {field}" in str(info.value), (bad, str(info.value))
    path.write_bytes(orjson.dumps({**good, "turns": ["no"], "type": "result"}) + b"\n")
    with pytest.raises(cl.SuiteError, match=r"bad.jsonl:1: turns\[0\]"):
        cl.load_run(path)
