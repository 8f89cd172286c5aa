"""Text checks of the JSONL (Yao) family: equals, contains, not_contains, regex, type, script.

They all read the turn's "output" (`output_of`, as Yao's `extractOutput`): the structured `data`
when the reply has some, else its text, else a summary of the tool results. Structured
output is searched as its JSON text (keys sorted, compact), so `contains "success"` finds
`{"status": "success"}`. Tool calls are never part of the text: use `tool_called`.
"""

from __future__ import annotations

from typing import Any

from convlab._readable import json_type
from convlab._user_code import call_user, import_callable
from convlab.checks._core import CheckContext, Outcome, error_result, kind, lean_kind, result
from convlab.checks._extract import extract_json, extract_path
from convlab.checks._regex import search
from convlab.checks._values import (
    cut,
    deep_equal,
    go_json,
    go_shown,
    go_type,
    json_safe,
    output_of,
    to_text,
)
from convlab.model.assertions import Contains, Equals, NotContains, Regex, Script, TypeOf
from convlab.model.records import AssertionResult

__all__ = ["contains", "equals", "input_of", "not_contains", "regex", "script", "type_of"]


@lean_kind("equals")
def equals(spec: Equals, ctx: CheckContext) -> Outcome:
    """The whole output equals `value`.

    Objects compare in any key order, arrays in order, numbers as numbers (5 == 5.0) and
    nothing is coerced: a text reply never equals an object, `1` never equals `"1"`.
    JSONL: `{"type": "equals", "value": ...}` and the case's `expected` shorthand.
    """
    out = output_of(ctx.observation, ctx.scope)
    if deep_equal(out, spec.value):
        return True, "values are equal", spec.value, out, None
    msg = f"expected {go_shown(spec.value)}, got {go_shown(out)}"  # assertEquals: Go's %v
    return False, msg, spec.value, out, None


@lean_kind("contains")
def contains(spec: Contains, ctx: CheckContext) -> Outcome:
    """The output text contains `value` (case-sensitive substring).

    Structured output is searched as its JSON text; a non-string value is JSON-encoded
    first (`5` looks for "5"); a missing value looks for "" and always passes.
    """
    text = to_text(output_of(ctx.observation, ctx.scope))
    needle = to_text(spec.value)
    if needle in text:
        return True, f"output contains '{needle}'", spec.value, text, None
    return False, f"output does not contain '{needle}'", spec.value, text, None


@lean_kind("not_contains")
def not_contains(spec: NotContains, ctx: CheckContext) -> Outcome:
    """The output text does not contain `value` (the exact negation of `contains`).

    JSONL: `{"type": "not_contains", "value": "error"}`; structured output is searched as JSON.
    """
    text = to_text(output_of(ctx.observation, ctx.scope))
    needle = to_text(spec.value)
    if needle in text:
        return False, f"output should not contain '{needle}'", spec.value, text, None
    return True, f"output does not contain '{needle}'", spec.value, text, None


@lean_kind("regex")
def regex(spec: Regex, ctx: CheckContext) -> Outcome:
    """An unanchored regex search over the output text (the text `contains` reads).

    Flags go inline, e.g. `(?i)hello`. JSONL writes the pattern as `value` (or `pattern`).
    """
    text = to_text(output_of(ctx.observation, ctx.scope))
    if search(spec.pattern, text) is not None:  # within a time limit (checks/_regex.py)
        return True, f"output matches pattern '{spec.pattern}'", spec.pattern, text, None
    return False, f"output does not match pattern '{spec.pattern}'", spec.pattern, text, None


def structured(out: Any) -> tuple[Any, str | None]:
    """The JSON document a path reads: the output itself, or JSON/YAML found in its text."""
    if isinstance(out, str):
        data = extract_json(out)
        if data is None:
            return None, f"output is not valid JSON: {cut(out)}"
        return data, None
    if isinstance(out, dict | list):
        return out, None
    # assertJSONPath: `%T = %v` of Go's types, the value as truncateOutput writes it (its JSON)
    shown = "<nil>" if out is None else cut(go_json(out))
    return None, f"output is not a JSON object or array, got: {go_type(out)} = {shown}"


@lean_kind("type")
def type_of(spec: TypeOf, ctx: CheckContext) -> Outcome:
    """The output (or the value at `path`) has JSON type `value`.

    Types: null, string, number, boolean, array, object. A text reply is a `string`
    unless a `path` is given: then the JSON/YAML found in it is read, as `json_path` does.
    """
    out = output_of(ctx.observation, ctx.scope)
    if not spec.path:
        actual, where = json_type(out), "output"
    else:
        data, problem = structured(out)
        if problem is not None:
            return False, problem, spec.value, out, None
        actual, where = json_type(extract_path(data, spec.path)), f"path '{spec.path}'"
    if actual == spec.value:
        return True, f"{where} is of type '{actual}'", spec.value, actual, None
    return False, f"{where}: expected type '{spec.value}', got '{actual}'", spec.value, actual, None


def input_of(ctx: CheckContext) -> Any:
    """The case input a script or validator receives: the text, or the message list."""
    if ctx.input is not None:
        return ctx.input.text
    messages = ctx.case.input if ctx.case is not None and ctx.case.input else None
    if messages is None:
        firsts = [m for m in ctx.messages if m.role == "user"][:1]
        return firsts[0].text() if firsts else None
    if len(messages) == 1 and isinstance(messages[0].content, str):
        return messages[0].content
    return [m.model_dump(exclude_none=True) for m in messages]


@kind("script")
async def script(spec: Script, ctx: CheckContext) -> AssertionResult:
    """A Python callable `module:function(output, input, expected)` decides.

    It returns a bool, or a dict `{"pass": bool, "message": str}` (a missing `pass` is a
    fail); anything else fails. A script that cannot be imported or raises is an error.
    """
    if not spec.script:
        return result(spec, False, "script assertion requires a script name")
    try:
        fn = import_callable(spec.script)
    except ImportError as exc:
        return error_result(spec, f"cannot import script {spec.script!r}: {exc}")
    out = output_of(ctx.observation, ctx.scope)
    value = await call_user(fn, out, input_of(ctx), spec.value)
    if isinstance(value, bool):
        msg = f"script assertion {'passed' if value else 'failed'}"
        return result(spec, value, msg, expected=spec.value, actual=out)
    if isinstance(value, dict):
        passed = value.get("pass") is True
        given = value.get("message")
        msg = given if isinstance(given, str) and given else ""
        msg = msg or f"script assertion {'passed' if passed else 'failed'}"
        details = {"returned": json_safe(value)}
        return result(spec, passed, msg, expected=spec.value, actual=out, details=details)
    msg = f"script returned unexpected type: {type(value).__name__}"
    return result(spec, False, msg, expected=spec.value, actual=out)
