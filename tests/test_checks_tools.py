"""Tool checks: Yao's tool_called / tool_result (§1.5) and HoloDeck's expected_tools (§2.3-2.4).

The matcher tables are HoloDeck's 23-row acceptance matrix (contracts/tool-arg-matchers.md
§7, tests/unit/lib/test_runner/test_tool_arg_matcher.py) plus its None semantics.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from convlab.checks import CheckContext, evaluate
from convlab.checks.toolargs import (
    evaluate_entry,
    match_arg,
    match_fuzzy,
    match_literal,
    match_regex,
)
from convlab.checks.tools import match_tool_name
from convlab.model.assertions import ArgMatcher, ExpectedTool, parse_assertion
from convlab.model.conversation import ToolCall
from convlab.model.records import AssertionResult, Observation


def ev(spec: dict[str, Any], calls: list[ToolCall], text: str = "") -> AssertionResult:
    obs = Observation(text=text, tool_calls=calls)
    return asyncio.run(evaluate(parse_assertion(spec), CheckContext(observation=obs)))


SETUP = "agents_expense_tools__setup"


# ---------------------------------------------------------------- Yao: names


@pytest.mark.parametrize(
    ("actual", "expected", "matched"),
    [
        (SETUP, SETUP, True),  # exact
        (SETUP, "setup", True),  # __ suffix
        ("tools.setup", "setup", True),  # . suffix
        (SETUP, "expense", True),  # substring (Yao's contains fallback)
        (SETUP, "Setup", False),  # case-sensitive
        ("agents_expense_tools__submit", "setup", False),
    ],
)
def test_match_tool_name(actual: str, expected: str, matched: bool) -> None:
    assert match_tool_name(actual, expected) is matched


# ---------------------------------------------------------------- Yao: tool_called (assert_test.go)


@pytest.mark.parametrize(
    ("value", "calls", "passed"),
    [
        (SETUP, [ToolCall(SETUP, result={"success": True})], True),  # exact match
        ("setup", [ToolCall(SETUP)], True),  # suffix match
        ("setup", [ToolCall("agents_expense_tools__submit")], False),  # wrong tool
        (["setup", "init"], [ToolCall("agents_expense_tools__init")], True),  # any of
        (["setup", "other"], [ToolCall("x")], False),
        (
            {"name": "setup", "arguments": {"action": "init"}},
            [ToolCall(SETUP, {"action": "init", "config": {}})],
            True,
        ),
        (
            {"name": "setup", "arguments": {"action": "init"}},
            [ToolCall(SETUP, '{"action":"init","config":{"default_currency":"USD"}}')],
            True,
        ),  # arguments as a JSON string
        (
            {"name": "setup", "arguments": {"action": "update"}},
            [ToolCall(SETUP, {"action": "init"})],
            False,
        ),
        ({"name": "setup", "arguments": {"n": 5}}, [ToolCall(SETUP, {"n": 5.0})], True),  # 5 == 5.0
        (
            {"name": "setup", "arguments": {"n": "5"}},
            [ToolCall(SETUP, {"n": 5})],
            False,
        ),  # no coercion
        (
            {"name": "setup", "arguments": {"o": {"a": 1, "b": 2}}},
            [ToolCall(SETUP, {"o": {"b": 2, "a": 1}})],
            True,
        ),
        ({"name": "setup", "arguments": {"a": 1}}, [ToolCall(SETUP, "not json")], False),
        ({"name": "setup"}, [ToolCall(SETUP)], True),
    ],
)
def test_tool_called_table(value: Any, calls: list[ToolCall], passed: bool) -> None:
    assert ev({"kind": "tool_called", "value": value}, calls).passed is passed


def test_tool_called_messages() -> None:
    none = ev({"kind": "tool_called", "value": "setup"}, [])
    assert none.message == "no tools were called" and none.actual == []
    wrong = ev({"kind": "tool_called", "value": "setup"}, [ToolCall("submit"), ToolCall("list")])
    # assert.go assertToolCalled: `called: %v` of a []string
    assert wrong.message == "tool 'setup' was not called, called: [submit list]"
    assert wrong.expected == "setup" and wrong.actual == ["submit", "list"]
    ok = ev({"kind": "tool_called", "value": "setup"}, [ToolCall(SETUP)])
    assert ok.message == "tool 'setup' was called"
    anyof = ev({"kind": "tool_called", "value": ["a", "b"]}, [ToolCall("c")])
    assert anyof.message == "none of the expected tools were called, called: [c]"
    args = ev(
        {"kind": "tool_called", "value": {"name": "setup", "arguments": {"action": "x"}}},
        [ToolCall(SETUP, {"action": "init"})],
    )
    assert args.message == "tool 'setup' was not called with expected arguments"  # no more
    assert args.actual == [{"name": SETUP, "arguments": {"action": "init"}}]
    assert args.expected == {"name": "setup", "arguments": {"action": "x"}}


def test_tool_called_ignores_text_and_negates() -> None:
    res = ev(
        {"kind": "tool_called", "value": "delete", "negate": True}, [ToolCall("read")], "delete"
    )
    assert res.passed


# ---------------------------------------------------------------- Yao: tool_result


@pytest.mark.parametrize(
    ("spec", "calls", "passed"),
    [
        (
            {"tool": "setup", "result": {"success": True}},
            [ToolCall(SETUP, result={"success": True, "message": "Setup complete"})],
            True,
        ),
        (
            {"tool": "setup", "result": {"message": "regex:(?i)setup.*complete"}},
            [ToolCall(SETUP, result={"message": "Setup complete!"})],
            True,
        ),
        (
            {"tool": "setup"},
            [ToolCall(SETUP, result={"success": True})],
            True,
        ),  # no result: just no error
        ({"tool": "setup"}, [ToolCall(SETUP, error="permission denied")], False),
        (
            {"tool": "setup", "result": {"success": True}},
            [ToolCall(SETUP, result={"success": False})],
            False,
        ),
        (
            {"tool": "setup", "result": {"count": "5"}},
            [ToolCall(SETUP, result={"count": 5})],
            True,
        ),  # %v text
        (
            {"tool": "setup", "result": {"count": "regex:^1e\\+06$"}},
            [ToolCall(SETUP, result={"count": 1e6})],
            True,
        ),
        (
            {"tool": "setup", "result": {"ok": True}},
            [ToolCall(SETUP, result={"ok": "true"})],
            False,
        ),  # strict bool
        (
            {"tool": "setup", "result": {"a": {"b": 1}}},
            [ToolCall(SETUP, result={"a": {"b": 1.0, "c": 2}})],
            True,
        ),
        ({"tool": "setup", "result": {"x": 1}}, [ToolCall(SETUP, result="plain")], False),
        (
            {"tool": "setup", "result": None},
            [ToolCall(SETUP, result={"a": 1})],
            False,
        ),  # given null must match
        # only the FIRST name-matching call is checked
        (
            {"tool": "setup", "result": {"n": 2}},
            [ToolCall(SETUP, result={"n": 1}), ToolCall(SETUP, result={"n": 2})],
            False,
        ),
    ],
)
def test_tool_result_table(spec: dict[str, Any], calls: list[ToolCall], passed: bool) -> None:
    assert ev({"kind": "tool_result", **spec}, calls).passed is passed


def test_tool_result_messages() -> None:
    assert ev({"kind": "tool_result", "tool": "x"}, []).message == "no tools were called"
    err = ev({"kind": "tool_result", "tool": "setup"}, [ToolCall(SETUP, error="denied")])
    assert err.message == "tool 'setup' returned error: denied"
    miss = ev({"kind": "tool_result", "tool": "other"}, [ToolCall(SETUP)])
    assert miss.message == "tool 'other' was not called"  # assertToolResult says no more
    assert miss.actual == [SETUP]
    bad = ev(
        {"kind": "tool_result", "tool": "setup", "result": {"ok": 1}},
        [ToolCall(SETUP, result={"ok": 2})],
    )
    assert bad.message == "tool 'setup' result does not match expected"
    assert bad.expected == {"tool": "setup", "result": {"ok": 1}} and bad.actual == {"ok": 2}
    ok = ev({"kind": "tool_result", "tool": "setup"}, [ToolCall(SETUP, result=1)])
    assert ok.message == "tool 'setup' executed successfully"


# ---------------------------------------------------------------- HoloDeck: 23-row matrix


@pytest.mark.parametrize(
    ("row", "expected", "actual", "matched"),
    [
        (1, 206588, 206588, True),
        (2, 206588, 206588.0, True),  # int <-> float
        (3, 206588, 206000, False),
        (4, 206588.0, 206588, True),
        (18, True, True, True),  # bool strict
        (19, True, 1, False),  # bool != int
        (20, [1, 2], [1, 2], True),
        (21, [1, 2], [1.0, 2.0], True),  # element-wise numeric
        (22, {"mode": "fast"}, {"mode": "fast"}, True),
        (0, {"mode": "fast"}, {"mode": "fast", "x": 1}, False),  # dicts need the same keys
        (0, "206588", 206588, False),  # strings exact, no coercion
        (0, "Yes", "yes", False),
        (0, None, None, True),
        (0, None, 0, False),
        (0, 0, None, False),
    ],
)
def test_literal_matrix(row: int, expected: Any, actual: Any, matched: bool) -> None:
    assert match_literal(expected, actual) is matched


@pytest.mark.parametrize(
    ("row", "pattern", "actual", "matched"),
    [
        (5, "206588", "206,588", True),  # separator
        (6, "206588", "206 588", True),  # whitespace
        (7, "206588", 206588.0, True),  # numeric str <-> float
        (8, "206588", 205000, False),  # no distance tolerance
        (9, "14.14%", 0.1414, True),  # percent
        (10, "YES", "yes", True),  # case
        (11, "YES", " yes ", True),  # trim
        # HoloDeck 0.7.1 tool_arg_matcher.py `_normalize`: `[,_\u202f]` deleted, the
        # ASCII space kept (collapsed), so these two differ
        (0, "Hello World", "helloworld", False),
        (0, "hello_world", "hello world", False),
        (0, "a\tb", "a\nb", True),  # other whitespace collapsed to one space
        (0, "none", None, True),  # str(None).lower()
        (0, "yes", True, False),  # "true" is not "yes"
        (0, "206,588.5", "206588.50", True),
    ],
)
def test_fuzzy_matrix(row: int, pattern: str, actual: Any, matched: bool) -> None:
    assert match_fuzzy(pattern, actual) is matched


@pytest.mark.parametrize(
    ("row", "pattern", "actual", "matched"),
    [
        (12, "^2009.*$", "2009 cash flow", True),  # anchored fullmatch
        (13, "^2009.*$", "report 2009 cash flow", False),
        (14, r"^181001(\.0+)?$", "181001.0", True),
        (15, r"^181001(\.0+)?$", "181001.5", False),
        (0, "2009", "2009 cash", False),  # fullmatch even without anchors
        (0, r"181001\.0", 181001.0, True),  # str(actual)
        (0, "True", True, True),
        (0, "None", None, True),
    ],
)
def test_regex_matrix(row: int, pattern: str, actual: Any, matched: bool) -> None:
    assert match_regex(pattern, actual) is matched


def test_row_23_multi_call_any_wins() -> None:
    calls = [ToolCall("subtract", {"a": 99}), ToolCall("subtract", {"a": 206588.0})]
    entry = ExpectedTool(name="subtract", args={"a": ArgMatcher(mode="fuzzy", value="206588")})
    detail = evaluate_entry(entry, calls)
    assert detail["matched_call_index"] == 1 and detail["unmatched_reason"] is None


def test_match_arg_reasons_name_the_pattern() -> None:
    assert match_arg(ArgMatcher(value=206588), 206588) == (True, None)
    ok, why = match_arg(ArgMatcher(value=206588), 205000)
    assert not ok and why == "expected 206588, got 205000"
    ok, why = match_arg(ArgMatcher(mode="fuzzy", value="206588"), 205000)
    assert not ok and why is not None and "206588" in why and "≈" in why
    ok, why = match_arg(ArgMatcher(mode="regex", value="^abc$"), "xyz")
    assert not ok and why == "expected regex '^abc$', got 'xyz'"


# ---------------------------------------------------------------- HoloDeck: expected_tools


def et(tools: list[Any], calls: list[ToolCall]) -> AssertionResult:
    entries = [{"name": t, "bare": True} if isinstance(t, str) else t for t in tools]
    return ev({"kind": "expected_tools", "tools": entries}, calls)


def test_fast_path_is_substring_and_ignores_extras_and_order() -> None:
    calls = [ToolCall("math_subtract"), ToolCall("lookup_table"), ToolCall("divide")]
    assert et(["divide", "subtract"], calls).passed
    res = et(["subtract", "multiply", "add"], calls)
    assert not res.passed
    assert res.message == "expected tool(s) not called in this turn: multiply, add"
    assert et(["Subtract"], calls).status == "failed"  # case-sensitive
    assert et([], []).passed  # an empty list passes


def test_object_entry_without_args_and_count_one_is_the_fast_path() -> None:
    res = et([{"name": "divide"}], [])
    assert res.message == "expected tool(s) not called in this turn: divide"
    assert res.details["arg_match_details"] == []


def test_object_path_with_args() -> None:
    entry = {
        "name": "subtract",
        "args": {"a": {"value": 206588}, "b": {"mode": "fuzzy", "value": "181001"}},
    }
    calls = [ToolCall("subtract", {"a": 206588.0, "b": "181,001", "c": "extra"})]
    res = et([entry], calls)
    assert res.passed
    assert res.details["arg_match_details"] == [
        {
            "expected_tool": "subtract",
            "args_asserted": {"a": 206588, "b": {"fuzzy": "181001"}},
            "matched_call_index": 0,
            "unmatched_reason": None,
        }
    ]


def test_object_path_failure_reasons() -> None:
    entry = {"name": "subtract", "args": {"a": {"value": 206588}}}
    missing = et([entry], [ToolCall("subtract", {"b": 1})])  # row 16
    assert missing.message == "expected subtract(a=206588): arg 'a' missing"
    assert missing.details["arg_match_details"][0]["matched_call_index"] == -1
    wrong = et([entry], [ToolCall("subtract", {"a": 205000})])
    assert (
        wrong.message
        == "expected subtract(a=206588): arg 'a' mismatch: expected 206588, got 205000"
    )
    none = et([entry], [ToolCall("add", {"a": 206588})])
    assert none.message == "expected subtract(a=206588): no call to 'subtract' found"
    rx = {
        "name": "f",
        "args": {"y": {"mode": "regex", "value": "^2009$"}, "z": {"mode": "fuzzy", "value": "x"}},
    }
    res = et([rx], [ToolCall("f", {"y": "2010", "z": "X"})])
    assert res.message.startswith("expected f(y~^2009$, z≈x): arg 'y' mismatch")


def test_count_threshold() -> None:
    entry = {"name": "subtract", "args": {"a": {"mode": "fuzzy", "value": "206588"}}, "count": 2}
    one = et([entry], [ToolCall("subtract", {"a": 206588}), ToolCall("subtract", {"a": 99})])
    assert not one.passed and one.message.endswith("expected 2 matching call(s), got 1")
    two = et([entry], [ToolCall("subtract", {"a": 206588}), ToolCall("subtract", {"a": 206588.0})])
    assert two.passed
    plain = et([{"name": "ping", "count": 3}], [ToolCall("ping"), ToolCall("ping")])
    assert plain.message == "expected ping(): expected 3 matching call(s), got 2"


def test_arguments_sent_as_json_text_are_read() -> None:
    entry = {"name": "subtract", "args": {"a": {"value": 1}}}
    assert et([entry], [ToolCall("subtract", '{"a": 1.0}')]).passed


def test_mixed_list_reports_every_problem() -> None:
    entry = {"name": "divide", "args": {"x": {"value": 1}}}
    res = et(["lookup", entry], [ToolCall("divide", {"x": 2})])
    assert res.message == (
        "expected tool(s) not called in this turn: lookup; "
        "expected divide(x=1): arg 'x' mismatch: expected 1, got 2"
    )
    assert res.expected == ["lookup", {"name": "divide", "args": {"x": 1}, "count": 1}]
    assert res.actual == [{"name": "divide", "arguments": {"x": 2}}]
