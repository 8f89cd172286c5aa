"""Tool checks of the JSONL (Yao) family: `tool_called` and `tool_result` (Yao's assert.go).

They read the turn's tool calls (name, arguments, result, error), which are never part of
the text that `contains` or `regex` search. A tool name matches when it equals the expected
name, ends with `__name` or `.name`, or simply contains it: `setup` matches
`agents_expense_tools__setup` (a case-sensitive substring, as Yao does).
"""

from __future__ import annotations

import json
from typing import Any

from convlab.checks._core import CheckContext, Outcome, lean_kind, result
from convlab.checks._regex import search
from convlab.checks._values import deep_equal, go_v
from convlab.model.assertions import ToolCalled, ToolExpectation, ToolResult
from convlab.model.conversation import ToolCall
from convlab.model.records import AssertionResult

__all__ = [
    "holodeck_arguments",
    "match_arguments",
    "match_result",
    "match_tool_name",
    "parse_arguments",
    "tool_called",
    "tool_result",
]


def match_tool_name(actual: str, expected: str) -> bool:
    """Yao's rule: equal, a `__name` / `.name` suffix, or a substring (case-sensitive)."""
    return (
        actual == expected
        or actual.endswith(("__" + expected, "." + expected))
        or expected in actual
    )


def parse_arguments(arguments: Any) -> dict[str, Any] | None:
    """Call arguments as a dict: a dict as is, a JSON object string parsed; else None."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def holodeck_arguments(arguments: Any) -> dict[str, Any]:
    """Call arguments as HoloDeck 0.7.1 reads them (`_parse_tool_arguments`, openai backend).

    An object as is; a JSON object text parsed; any other text (not JSON, or JSON that is
    not an object) as `{"raw": <the text>}`; no arguments as `{}`. A list or scalar that an
    agent adapter already decoded from JSON is wrapped as `{"raw": <its JSON text>}`, the
    text HoloDeck would have seen (compact separators may differ from the wire). HoloDeck's
    `expected_tools` and code graders see exactly this, so a HoloDeck file asserting
    `args: {raw: ...}` on a tool that sends plain text behaves the same in convlab.
    """
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return {"raw": arguments}
        return parsed if isinstance(parsed, dict) else {"raw": arguments}
    if arguments is None:
        return {}
    try:
        return {"raw": json.dumps(arguments, ensure_ascii=False)}
    except (TypeError, ValueError):
        return {"raw": str(arguments)}


def match_arguments(actual: Any, expected: dict[str, Any]) -> bool:
    """Every expected key is present and equal (deep, no coercion); extra keys are ignored."""
    args = parse_arguments(actual)
    if args is None:
        return False
    return all(k in args and deep_equal(args[k], v) for k, v in expected.items())


def match_result(actual: Any, expected: Any) -> bool:
    """Yao's `matchResult`: objects by expected keys (recursively), `regex:` strings, `%v` text."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and match_result(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, str):
        if expected.startswith("regex:"):
            return search(expected[len("regex:") :], go_v(actual)) is not None  # time-limited
        return go_v(actual) == expected
    if isinstance(expected, bool):
        return isinstance(actual, bool) and actual == expected
    return deep_equal(actual, expected)


def _names(calls: list[ToolCall]) -> str:
    """The called tools as Yao's messages print them (`%v` of a []string: `[a b]`)."""
    return go_v([c.name for c in calls])


@lean_kind("tool_called")
def tool_called(spec: ToolCalled, ctx: CheckContext) -> Outcome:
    """A tool was called in this turn: a name, any of several names, or a name with arguments.

    `value` is `"name"`, `["a", "b"]` (any of them) or `{"name": ..., "arguments": {...}}`
    where every given argument must be present and equal (extra arguments are ignored;
    arguments sent as a JSON string are parsed first). Names match by Yao's rule.
    """
    calls = ctx.observation.tool_calls
    names = [c.name for c in calls]
    # Deliberate difference `no-response` (docs/yao.md): a check always has the turn's
    # observation, so Yao's "no response available for tool_called assertion" (an unset
    # Asserter field) never applies; no calls is "no tools were called", as in Yao.
    if not calls:
        return False, "no tools were called", _wire(spec.value), [], None
    value = spec.value
    wanted = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if wanted is not None:
        for name in wanted:
            if any(match_tool_name(n, name) for n in names):
                return True, f"tool '{name}' was called", _wire(value), names, None
        msg = (
            f"tool '{value}' was not called, called: {_names(calls)}"
            if isinstance(value, str)
            else f"none of the expected tools were called, called: {_names(calls)}"
        )
        return False, msg, _wire(value), names, None
    assert isinstance(value, ToolExpectation)
    return _with_arguments(spec, value, calls)


def _wire(value: Any) -> Any:
    return value.model_dump(exclude_none=True) if isinstance(value, ToolExpectation) else value


def _with_arguments(spec: ToolCalled, want: ToolExpectation, calls: list[ToolCall]) -> Outcome:
    named = [c for c in calls if match_tool_name(c.name, want.name)]
    actual = [{"name": c.name, "arguments": c.arguments} for c in calls]
    expected = _wire(want)
    if want.arguments is None:
        if named:
            return True, f"tool '{want.name}' was called", expected, actual, None
        msg = f"tool '{want.name}' was not called, called: {_names(calls)}"
        return False, msg, expected, actual, None
    if any(match_arguments(c.arguments, want.arguments) for c in named):
        msg = f"tool '{want.name}' was called with matching arguments"
        return True, msg, expected, actual, None
    # Yao's message says no more; what was called, with which arguments, is in `actual`
    msg = f"tool '{want.name}' was not called with expected arguments"
    return False, msg, expected, actual, None


@lean_kind("tool_result")
def tool_result(spec: ToolResult, ctx: CheckContext) -> Outcome | AssertionResult:
    """The FIRST call of `tool` succeeded and, when `result` is given, its result matches.

    A call with an error fails. Matching: an object by its expected keys (recursively,
    extra keys ignored); a string `regex:PATTERN` searches the value's text; another string
    compares with the value's text; a bool must be that bool; anything else is deep equality.
    """
    calls = ctx.observation.tool_calls
    expected = {"tool": spec.tool, **({"result": spec.result} if spec.has_result else {})}
    if not calls:
        return result(spec, False, "no tools were called", expected=expected)
    call = next((c for c in calls if match_tool_name(c.name, spec.tool)), None)
    if call is None:  # assertToolResult: no list of what was called
        msg = f"tool '{spec.tool}' was not called"
        return result(spec, False, msg, expected=expected, actual=[c.name for c in calls])
    actual = call.result
    if call.error:
        msg = f"tool '{spec.tool}' returned error: {call.error}"
        return False, msg, expected, actual, None
    if not spec.has_result:
        return True, f"tool '{spec.tool}' executed successfully", expected, actual, None
    ok = match_result(actual, spec.result)
    msg = f"tool '{spec.tool}' result {'matches' if ok else 'does not match'} expected"
    return ok, msg, expected, actual, None
