"""JSONL (Yao) text checks: what "output" is, equals/contains/not_contains/regex/type/script.

Tables follow Yao's agent/test/assert.go and assert_test.go (docs/yao.md), with
the decisions table applied (order-insensitive objects, 5 == 5.0, no coercion).
"""

from __future__ import annotations

import asyncio
import sys
import types
from typing import Any

import pytest

from convlab.checks import CheckContext, evaluate
from convlab.checks._values import go_json, go_type, go_v, output_of, to_text
from convlab.model.assertions import parse_assertion
from convlab.model.conversation import Message, ToolCall
from convlab.model.records import AssertionResult, Observation
from convlab.model.suite import Case, TurnInput


def ev(spec: dict[str, Any], obs: Observation | str | None = None, **ctx: Any) -> AssertionResult:
    """Evaluate one native-spelling spec on an observation (or a text reply)."""
    if not isinstance(obs, Observation):
        obs = Observation(text=obs)
    return asyncio.run(evaluate(parse_assertion(spec), CheckContext(observation=obs, **ctx)))


# ---------------------------------------------------------------- what "output" means (§1.3)


def test_output_prefers_data_then_text_then_tool_summary() -> None:
    calls = [ToolCall("lookup", result={"message": "found 3"})]
    assert output_of(Observation(text="hi", data={"a": 1}, tool_calls=calls)) == {"a": 1}
    assert output_of(Observation(text="hi", data={}, tool_calls=calls)) == "hi"
    assert output_of(Observation(text="", data=[], tool_calls=calls)) == "found 3"
    assert output_of(Observation()) is None


def test_output_keeps_falsy_data_that_is_not_empty() -> None:
    assert output_of(Observation(text="t", data=0)) == 0
    assert output_of(Observation(text="t", data=False)) is False


def test_tool_summary_when_no_result_message() -> None:
    calls = [
        ToolCall("a", result={"action": "init"}),
        ToolCall("b", result={"success": False}),
        ToolCall("c", result="raw"),
        ToolCall("d", result={"message": ""}),
    ]
    assert output_of(Observation(tool_calls=calls)) == "[a: init] [b: failed] [c] [d]"


def test_checkpoint_scope_reads_text_plus_tool_messages_but_not_data() -> None:
    calls = [ToolCall("t1", result={"message": "Saved"}), ToolCall("t2", result={"ok": 1})]
    obs = Observation(text="Done.", data={"x": 1}, tool_calls=calls)
    assert output_of(obs, "checkpoint") == "Done.\nSaved"


def test_tool_calls_are_not_part_of_the_text() -> None:
    obs = Observation(text="ok", tool_calls=[ToolCall("create_expense", {"amount": 5})])
    res = ev({"kind": "contains", "value": "create_expense"}, obs)
    assert res.status == "failed"


def test_go_json_text_is_sorted_compact_and_html_escaped() -> None:
    assert go_json({"b": 1, "a": "<x & y>"}) == '{"a":"\\u003cx \\u0026 y\\u003e","b":1}'
    assert go_json({"n": 5.0, "f": 1.5, "l": [True, None]}) == '{"f":1.5,"l":[true,null],"n":5}'
    assert to_text(None) == "" and to_text("é") == "é" and to_text(5) == "5"


# What Go prints for a value encoding/json decoded into interface{}: every number is a float64,
# and `%v` of a float64 is strconv.FormatFloat(f, 'g', -1, 64): the shortest digits, the
# exponent form (two digits at least) when the exponent is < -4 or >= 6; maps print
# `map[k:v]` in sorted key order, slices `[a b]`, strings bare, nil `<nil>`.
GO_V = [
    (0, "0", "float64"),
    (5, "5", "float64"),
    (5.0, "5", "float64"),
    (-7, "-7", "float64"),
    (100000, "100000", "float64"),
    (999999, "999999", "float64"),
    (1000000, "1e+06", "float64"),
    (1234567, "1.234567e+06", "float64"),
    (123456789, "1.23456789e+08", "float64"),
    (-123456789, "-1.23456789e+08", "float64"),
    (2**53 + 1, "9.007199254740992e+15", "float64"),  # a float64 cannot hold it
    (10**21, "1e+21", "float64"),
    (1e100, "1e+100", "float64"),
    (1.7976931348623157e308, "1.7976931348623157e+308", "float64"),
    (123456.7, "123456.7", "float64"),
    (0.5, "0.5", "float64"),
    (0.0001, "0.0001", "float64"),
    (0.00001, "1e-05", "float64"),
    (1.5e-7, "1.5e-07", "float64"),
    (5e-324, "5e-324", "float64"),
    (0.1 + 0.2, "0.30000000000000004", "float64"),
    (-2.5, "-2.5", "float64"),
    (-0.0, "-0", "float64"),
    (True, "true", "bool"),
    (False, "false", "bool"),
    ("a b", "a b", "string"),
    ("", "", "string"),
    (None, "<nil>", "<nil>"),
    ({}, "map[]", "map[string]interface {}"),
    ([], "[]", "[]interface {}"),
    ({"b": 1, "a": "x"}, "map[a:x b:1]", "map[string]interface {}"),
    (
        {"b": 1, "a": {"c": [1000000, None, "x y"]}},
        "map[a:map[c:[1e+06 <nil> x y]] b:1]",
        "map[string]interface {}",
    ),
    ([[1, 2], {"k": True}, 0.00001], "[[1 2] map[k:true] 1e-05]", "[]interface {}"),
]


@pytest.mark.parametrize(("value", "v", "t"), GO_V, ids=[repr(row[0])[:30] for row in GO_V])
def test_go_v_and_go_type_print_as_go_prints_a_decoded_json_value(
    value: object, v: str, t: str
) -> None:
    assert go_v(value) == v
    assert go_type(value) == t


# ---------------------------------------------------------------- equals


@pytest.mark.parametrize(
    ("output", "value", "passed"),
    [
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # object key order ignored
        ({"n": 5}, {"n": 5.0}, True),  # numbers as numbers
        ({"n": 1}, {"n": "1"}, False),  # no coercion
        ({"n": True}, {"n": 1}, False),  # bool is not a number
        ([1, 2], [2, 1], False),  # arrays in order
        ("OK", "OK", True),
        ("OK", {"status": "OK"}, False),  # text never equals an object
    ],
)
def test_equals_table(output: Any, value: Any, passed: bool) -> None:
    obs = Observation(text=output) if isinstance(output, str) else Observation(data=output)
    assert ev({"kind": "equals", "value": value}, obs).passed is passed


def test_equals_failure_shows_expected_and_actual() -> None:
    res = ev({"kind": "equals", "value": {"a": 2}}, Observation(data={"a": 1}))
    assert res.message == "expected map[a:2], got map[a:1]"  # assert.go assertEquals: %v
    assert res.expected == {"a": 2} and res.actual == {"a": 1}
    assert "expected: {'a': 2}" in repr(res) and "actual:   {'a': 1}" in repr(res)


# ---------------------------------------------------------------- contains / not_contains


@pytest.mark.parametrize(
    ("output", "value", "passed"),
    [
        ("hello world", "hello", True),  # assert_test.go: string contains substring
        ("hello world", "goodbye", False),
        ({"status": "success"}, "success", True),  # JSON contains field
        ("Hello", "hello", False),  # case-sensitive
        ("count: 5", 5, True),  # non-string value JSON-encoded
        ("anything", None, True),  # nil value -> "" -> always passes
        ({"a": "<b>"}, "<b>", False),  # structured output is HTML-escaped JSON text
        ({"a": "<b>"}, "\\u003cb\\u003e", True),
    ],
)
def test_contains_table(output: Any, value: Any, passed: bool) -> None:
    obs = Observation(text=output) if isinstance(output, str) else Observation(data=output)
    assert ev({"kind": "contains", "value": value}, obs).passed is passed


def test_contains_messages() -> None:
    ok = ev({"kind": "contains", "value": "world"}, "hello world")
    assert ok.message == "output contains 'world'"
    bad = ev({"kind": "contains", "value": "moon"}, "hello world")
    assert bad.message == "output does not contain 'moon'"
    assert bad.expected == "moon" and bad.actual == "hello world"


def test_not_contains_is_the_exact_negation() -> None:
    ok = ev({"kind": "not_contains", "value": "error"}, "all good")
    assert ok.passed and ok.message == "output does not contain 'error'"
    bad = ev({"kind": "not_contains", "value": "error"}, "an error happened")
    assert not bad.passed and bad.message == "output should not contain 'error'"


# ---------------------------------------------------------------- regex


@pytest.mark.parametrize(
    ("pattern", "output", "passed"),
    [
        (r"\d{3}-\d{4}", "Phone: 123-4567", True),  # assert_test.go
        (r"\d{3}-\d{4}", "No phone number here", False),
        ("(?i)HELLO", "well, hello there", True),  # inline flags
        ("^world", "hello world", False),  # unanchored search, but ^ still anchors
        ('"ok":true', None, True),  # searches the JSON text of structured output
    ],
)
def test_regex_table(pattern: str, output: str | None, passed: bool) -> None:
    obs = Observation(text=output) if output is not None else Observation(data={"ok": True})
    assert ev({"kind": "regex", "pattern": pattern}, obs).passed is passed


def test_regex_messages() -> None:
    bad = ev({"kind": "regex", "pattern": r"order-\d+"}, "no order")
    assert bad.message == r"output does not match pattern 'order-\d+'"
    assert bad.actual == "no order"


# ---------------------------------------------------------------- negate and message


def test_negate_inverts_and_says_so() -> None:
    """Yao agent/test/assert.go `evaluateAssertion`: a passing negation says so; a failing
    one keeps what the inner check found, prefixed "negated: "."""
    ok = ev({"kind": "contains", "value": "error", "negate": True}, "success message")
    assert ok.passed and ok.message == "negated assertion passed"
    bad = ev({"kind": "contains", "value": "success", "negate": True}, "success message")
    assert not bad.passed and bad.message == "negated: output contains 'success'"


def test_custom_message_replaces_a_failure_message_only() -> None:
    spec = {"kind": "contains", "value": "x", "message": "the reply must mention x"}
    assert ev(spec, "no").message == "the reply must mention x"
    assert ev(spec, "x").message == "output contains 'x'"


def test_negate_never_turns_an_error_into_a_pass() -> None:
    spec = {"kind": "script", "script": "no_such_module_xyz:fn", "negate": True}
    res = ev(spec, "x")
    assert res.status == "error" and not res.passed


def test_every_result_has_kind_id_label_and_duration() -> None:
    res = ev({"kind": "contains", "value": "a", "id": "c1", "label": "mentions a"}, "a")
    assert (res.kind, res.id, res.label) == ("contains", "c1", "mentions a")
    assert res.duration_ms >= 0


# ---------------------------------------------------------------- type


@pytest.mark.parametrize(
    ("obs", "value", "passed"),
    [
        (Observation(text="hi"), "string", True),
        (Observation(text='{"a": 1}'), "string", True),  # no JSON extraction without a path
        (Observation(data={"a": 1}), "object", True),
        (Observation(data=[1]), "array", True),
        (Observation(data=3.5), "number", True),
        (Observation(data=True), "boolean", True),
        (Observation(), "null", True),
        (Observation(data=True), "number", False),
    ],
)
def test_type_of_whole_output(obs: Observation, value: str, passed: bool) -> None:
    assert ev({"kind": "type", "value": value}, obs).passed is passed


def test_type_with_path_reads_the_json_in_the_text() -> None:
    obs = Observation(text='Here:\n```json\n{"count": 3, "items": ["a"]}\n```')
    assert ev({"kind": "type", "value": "number", "path": "$.count"}, obs).passed
    bad = ev({"kind": "type", "value": "string", "path": "items"}, obs)
    assert bad.message == "path 'items': expected type 'string', got 'array'"
    assert bad.actual == "array"


def test_type_failure_message() -> None:
    res = ev({"kind": "type", "value": "object"}, "plain text")
    assert res.message == "output: expected type 'object', got 'string'"


# ---------------------------------------------------------------- script


@pytest.fixture
def scripts(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("convlab_test_scripts")

    def is_long(output: Any, input: Any, expected: Any) -> bool:
        return len(output) >= expected

    def detailed(output: Any, input: Any, expected: Any) -> dict[str, Any]:
        return {"pass": input == "Hello", "message": f"input was {input!r}"}

    def no_pass(output: Any, input: Any, expected: Any) -> dict[str, Any]:
        return {"message": "forgot pass"}

    def odd(output: Any, input: Any, expected: Any) -> int:
        return 3

    def boom(output: Any, input: Any, expected: Any) -> bool:
        raise RuntimeError("kaput")

    async def later(output: Any, input: Any, expected: Any) -> bool:
        return output == expected

    for fn in (is_long, detailed, no_pass, odd, boom, later):
        setattr(mod, fn.__name__, fn)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return mod


def test_script_returning_bool(scripts: types.ModuleType) -> None:
    ok = ev({"kind": "script", "script": "convlab_test_scripts:is_long", "value": 3}, "hello")
    assert ok.passed and ok.message == "script assertion passed"
    bad = ev({"kind": "script", "script": "convlab_test_scripts:is_long", "value": 9}, "hello")
    assert not bad.passed and bad.message == "script assertion failed"


def test_script_receives_output_input_expected(scripts: types.ModuleType) -> None:
    case = Case(id="c", input=[Message(role="user", content="Hello")])
    res = ev({"kind": "script", "script": "convlab_test_scripts.detailed"}, "x", case=case)
    assert res.passed and res.message == "input was 'Hello'"
    res = ev(
        {"kind": "script", "script": "convlab_test_scripts:detailed"},
        "x",
        input=TurnInput(text="Bye"),
    )
    assert not res.passed and res.message == "input was 'Bye'"


def test_script_result_rules(scripts: types.ModuleType) -> None:
    no_pass = ev({"kind": "script", "script": "convlab_test_scripts:no_pass"}, "x")
    assert no_pass.status == "failed" and no_pass.message == "forgot pass"
    odd = ev({"kind": "script", "script": "convlab_test_scripts:odd"}, "x")
    assert odd.status == "failed" and odd.message == "script returned unexpected type: int"
    later = ev({"kind": "script", "script": "convlab_test_scripts:later", "value": "x"}, "x")
    assert later.passed


def test_script_crash_or_missing_is_an_error(scripts: types.ModuleType) -> None:
    boom = ev({"kind": "script", "script": "convlab_test_scripts:boom"}, "x")
    assert boom.status == "error" and "RuntimeError: kaput" in (boom.error or "")
    assert "kaput" in boom.details["traceback"]
    missing = ev({"kind": "script", "script": "convlab_test_scripts:nope"}, "x")
    assert missing.status == "error" and "cannot import script" in missing.message


CATASTROPHIC = r"(a|aa)+$"  # every way to split forty a's is tried before the "!" fails it
HOSTILE_TEXT = "a" * 40 + "!"


def test_a_catastrophic_regex_is_a_suite_error_within_the_case_timeout() -> None:
    """The regex, tool_result `regex:` and expected_tools `{regex: ...}` checks stop a
    search that runs past the limit: an `error` blamed on the suite that names the pattern,
    and the run goes on (its loop is not held for the case's timeout, or for ever)."""
    import convlab as cl
    from convlab.model import Case as RunCase
    from convlab.model import Suite

    def agent(messages: Any) -> Any:
        call = cl.ToolCall("lookup", {"code": HOSTILE_TEXT}, HOSTILE_TEXT)
        return cl.Reply(text=HOSTILE_TEXT, tool_calls=[call])

    checks = [
        {"kind": "regex", "pattern": CATASTROPHIC},
        {"kind": "tool_result", "tool": "lookup", "result": f"regex:{CATASTROPHIC}"},
        {
            "kind": "expected_tools",
            "tools": [
                {"name": "lookup", "args": {"code": {"mode": "regex", "value": CATASTROPHIC}}}
            ],
        },
        {"kind": "regex", "pattern": r"^(a+)+$"},  # the issue's: the regex package is quick
    ]
    cases = [RunCase(id=f"c{i}", input=[Message(content="hi")], assertions=[c])
             for i, c in enumerate(checks)]  # fmt: skip
    run = cl.run(Suite(id="s", cases=cases), agent, timeout="30s", progress=False)
    for result in run.results[:3]:
        [check] = result.turns[0].assertions
        assert check.status == "error" and check.blame == "suite", check
        assert "ran past its" in (check.error or check.message) and CATASTROPHIC in (
            check.error or check.message
        )
    [issue] = run.results[3].turns[0].assertions
    assert issue.status == "failed"
