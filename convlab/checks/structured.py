"""Path-based checks: JSONL `json_path`, and the JSON-suite family (check, all, any, not, custom).

`json_path` (Yao's `assertJSONPath`) reads the JSON or YAML found in the output. `check`
(intention-kernel's assertions.ts) reads the observation's dict view (`response`, `checkpoint`,
`effects`; at suite scope `{summary, status}`), where a key is present only if it exists,
so `null` is present and a missing key is absent. No operator coerces types.
"""

from __future__ import annotations

import asyncio
import math
import traceback
from typing import Any

import msgspec

from convlab._user_code import call_user, positional_arity
from convlab.checks._core import (
    EVALUATORS,
    CheckContext,
    Outcome,
    error_result,
    evaluate,
    kind,
    lean_kind,
    result,
    runs_inline,
    skipped_result,
)
from convlab.checks._extract import extract_path
from convlab.checks._values import (
    deep_equal,
    go_shown,
    is_number,
    json_safe,
    output_of,
    same_value,
    show,
)
from convlab.checks.text import structured
from convlab.errors import UnknownNameError
from convlab.model.assertions import All, Any_, Check, Custom, JsonPath, Not
from convlab.model.blame import Blame, assertion_blame, blame_of
from convlab.model.records import AssertionResult
from convlab.model.tracebacks import error_info, error_text

__all__ = ["at", "check", "custom", "json_path", "matches", "operate", "scope_view"]


@lean_kind("json_path")
def json_path(spec: JsonPath, ctx: CheckContext) -> Outcome | AssertionResult:
    """The value at `path` of the JSON/YAML in the output equals `value`; a list is any-of.

    The JSON may be structured output, a fenced block in prose, or bare JSON/YAML text.
    Paths: `$.a.b` or `a.b`, with indexes `items[0].name`; a missing path reads as null.
    When `value` is a list and the actual value is not, the value may equal any element
    (OR semantics); an actual list must equal the whole list, in order.
    """
    data, problem = structured(output_of(ctx.observation, ctx.scope))
    if problem is not None:
        return result(spec, False, problem, expected=spec.value)
    actual = extract_path(data, spec.path)
    if deep_equal(actual, spec.value):
        return True, f"path '{spec.path}' equals expected value", spec.value, actual, None
    one_of = isinstance(spec.value, list) and not isinstance(actual, list)
    if one_of and any(deep_equal(actual, v) for v in spec.value):
        return True, f"path '{spec.path}' equals one of expected values", spec.value, actual, None
    # assertJSONPath prints both with Go's %v
    msg = f"path '{spec.path}': expected {go_shown(spec.value)}, got {go_shown(actual)}"
    return False, msg, spec.value, actual, None


def scope_view(ctx: CheckContext) -> dict[str, Any]:
    """The dict a `check` path reads: the observation view, or `{summary, status}` (suite)."""
    if ctx.scope == "suite":
        view = {"summary": ctx.summary, "status": ctx.extra.get("status")}
        return {k: v for k, v in view.items() if v is not None}
    view = ctx.observation.view()
    if "effects" not in view and ctx.world is not None:
        view["effects"] = ctx.world
    return view


def _index(segment: str | int, size: int) -> int | None:
    if isinstance(segment, int):
        return segment if 0 <= segment < size else None
    if segment.isdigit() and str(int(segment)) == segment and int(segment) < size:
        return int(segment)
    return None


def at(view: Any, path: list[str | int]) -> tuple[bool, Any]:
    """(present, value) at `path`: each step needs an object/array owning that key or index.

    As in JavaScript, `"0"` indexes an array, `0` reads an object's key "0", and `"length"`
    on an array is its length.
    """
    cursor = view
    for segment in path:
        if isinstance(cursor, dict):
            key: Any = segment if segment in cursor else str(segment)
            if key not in cursor:
                return False, None
            cursor = cursor[key]
        elif isinstance(cursor, list | tuple):
            if segment == "length":
                cursor = len(cursor)
                continue
            pos = _index(segment, len(cursor))
            if pos is None:
                return False, None
            cursor = cursor[pos]
        else:
            return False, None
    return True, cursor


def matches(actual: Any, expected: Any) -> bool:
    """Subset match: arrays item-wise with the same length, objects by expected keys only,
    other values by `same_value` (assertions.ts `matches`: isDeepStrictEqual)."""
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(matches(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and matches(actual[k], v) for k, v in expected.items()
        )
    return same_value(actual, expected)


def _length(value: Any) -> int | None:
    if isinstance(value, str):
        return len(value.encode("utf-16-le")) // 2  # JavaScript counts UTF-16 code units
    return len(value) if isinstance(value, list | tuple) else None


def operate(operator: str, present: bool, actual: Any, value: Any) -> bool:
    """Whether one `check` operator passes (no type coercion anywhere)."""
    if operator == "exists":
        return present
    if operator == "absent":
        return not present
    if not present:
        return False
    if operator == "equals":  # assertions.ts: isDeepStrictEqual, so -0 is not 0
        return same_value(actual, value)
    if operator == "matches":
        return matches(actual, value)
    if operator == "contains":
        if isinstance(actual, list | tuple):
            return any(matches(item, value) for item in actual)
        return isinstance(actual, str) and isinstance(value, str) and value in actual
    if operator in ("gte", "lte"):
        if not is_number(actual):
            return False
        return bool(actual >= value if operator == "gte" else actual <= value)
    if operator == "length":
        return bool(_length(actual) == value)
    raise ValueError(f"unknown operator {operator!r}")


def _path_text(path: list[str | int]) -> str:
    out = ""
    for seg in path:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out or "(root)"


def _shown(value: Any) -> str:
    """`show`, with a negative zero written `-0` (it differs from 0 for `equals`)."""
    if isinstance(value, float) and value == 0 and math.copysign(1, value) < 0:
        return "-0"
    return show(value)


def _check_message(spec: Check, passed: bool, present: bool, actual: Any) -> str:
    where, op = _path_text(spec.path), spec.operator
    want = "" if op in ("exists", "absent") else f" {_shown(spec.value)}"
    if passed:
        return f"{where} {op}{want}"
    if op == "absent":
        return f"{where}: expected absent, got {_shown(actual)}"
    if not present:
        return f"{where}: missing (expected {op}{want})"
    size = _length(actual)
    if op == "length" and size is not None:
        return f"{where}: expected length {spec.value}, got length {size}: {show(actual, 120)}"
    return f"{where}: expected {op}{want}, got {_shown(actual)}"


@lean_kind("check")
def check(spec: Check, ctx: CheckContext) -> Outcome:
    """The value at `path` (a list of keys and indexes) satisfies `operator`.

    Operators: equals (deep, strict), matches (subset: extra object keys allowed, arrays
    same length), contains (an array element that matches, or a substring of a string),
    exists (even if null), absent, gte / lte (numbers only), length (arrays and strings).
    Paths read `response.{text,data,status,interaction,tool_calls}`,
    `checkpoint.{facts,interaction}` and `effects`; suite assertions read `summary`, `status`.
    """
    present, actual = at(scope_view(ctx), spec.path)
    passed = operate(spec.operator, present, actual, spec.value)
    msg = _check_message(spec, passed, present, actual)
    details = {"present": present, "operator": spec.operator, "path": list(spec.path)}
    return passed, msg, spec.value, actual, details


async def _children(specs: list[Any], ctx: CheckContext) -> list[AssertionResult]:
    """Evaluate every child (never short-circuit), concurrently, in order.

    Children that never wait (`runs_inline`) are simply evaluated in turn: a task each
    would cost more than the checks.
    """
    if all(runs_inline(s) for s in specs):
        return [await evaluate(s, ctx) for s in specs]
    return list(await asyncio.gather(*(evaluate(s, ctx) for s in specs)))


def _name(res: AssertionResult) -> str:
    return res.label or res.id or res.kind


def _summary(kids: list[AssertionResult]) -> str:
    return "; ".join(f"{_name(k)}: {k.message}" for k in kids)


@kind("all")
async def all_(spec: All, ctx: CheckContext) -> AssertionResult:
    """Every child passes. All children run; a child error makes this an error.

    JSON suite: `{"id": "both", "kind": "all", "assertions": [{...}, {...}]}`. The children's
    results are kept in `children`; a failure message lists the failing ones.
    """
    kids = await _children(spec.assertions, ctx)
    errors = [k for k in kids if k.status == "error"]
    failed = [k for k in kids if k.status == "failed"]
    n = len(kids)
    if errors:
        why = f"{len(errors)} of {n} errored: {_summary(errors)}"
        return error_result(spec, why, _blame(errors), children=kids)
    if failed:
        return result(
            spec, False, f"{len(failed)} of {n} failed: {_summary(failed)}", children=kids
        )
    if all(k.status == "skipped" for k in kids):
        return skipped_result(spec, f"all {n} skipped", children=kids)
    return result(spec, True, f"all {n} passed", children=kids)


@kind("any")
async def any_(spec: Any_, ctx: CheckContext) -> AssertionResult:
    """Some child passes. All children run; a child error makes this an error.

    JSON suite: `{"id": "either", "kind": "any", "assertions": [{...}, {...}]}`: several
    observed outcomes are acceptable (it does not branch the conversation).
    """
    kids = await _children(spec.assertions, ctx)
    errors = [k for k in kids if k.status == "error"]
    passed = [k for k in kids if k.status == "passed"]
    n = len(kids)
    if errors:
        why = f"{len(errors)} of {n} errored: {_summary(errors)}"
        return error_result(spec, why, _blame(errors), children=kids)
    if passed:
        return result(spec, True, f"{len(passed)} of {n} passed", children=kids)
    if all(k.status == "skipped" for k in kids):
        return skipped_result(spec, f"all {n} skipped", children=kids)
    return result(spec, False, f"none of {n} passed: {_summary(kids)}", children=kids)


@kind("not")
async def not_(spec: Not, ctx: CheckContext) -> AssertionResult:
    """The child fails. A child error stays an error (never a pass).

    JSON suite: `{"id": "no-error", "kind": "not", "assertion": {...}}` (singular).
    """
    [kid] = await _children([spec.assertion], ctx)
    if kid.status == "error":
        return error_result(spec, f"child errored: {kid.message}", _blame([kid]), children=[kid])
    if kid.status == "skipped":
        return skipped_result(spec, f"child skipped: {kid.message}", children=[kid])
    if kid.status == "passed":
        return result(spec, False, f"child passed but should not: {kid.message}", children=[kid])
    return result(spec, True, f"child failed as required: {kid.message}", children=[kid])


def _blame(errored: list[AssertionResult]) -> Blame:
    """A composite's error is its first errored child's fault."""
    return assertion_blame(errored[0]) or "suite"


async def _call_evaluator(fn: Any, ctx: CheckContext, parameters: dict[str, Any]) -> Any:
    """`fn(ctx)` when it takes exactly one positional argument, else `fn(ctx, parameters)`.

    A sync evaluator runs in a daemon thread: one that blocks stalls neither the other
    cases in flight nor the end of the run.
    """
    if positional_arity(fn) == 1:
        return await call_user(fn, ctx)
    return await call_user(fn, ctx, parameters)


def _from_evaluator(spec: Custom, value: Any, expected: dict[str, Any]) -> AssertionResult:
    name = spec.evaluator
    if isinstance(value, AssertionResult):
        return msgspec.structs.replace(value, kind=spec.kind, id=spec.id, label=spec.label)
    if isinstance(value, bool):
        msg = f"evaluator {name!r} {'passed' if value else 'failed'}"
        return result(spec, value, msg, expected=expected)
    if isinstance(value, dict) and isinstance(value.get("passed"), bool):
        passed = value["passed"]
        msg = value.get("message") or f"evaluator {name!r} {'passed' if passed else 'failed'}"
        evidence = json_safe(value.get("evidence"))
        details = {"evidence": evidence} if evidence is not None else {}
        return result(spec, passed, str(msg), expected=expected, actual=evidence, details=details)
    msg = f"evaluator {name!r} returned an invalid result: 'passed' must be a boolean"
    msg += f", got {show(value)}"
    # intention-kernel assertions.ts `evaluate`: a non-boolean `passed` is this code
    return error_result(spec, msg, expected=expected, details={"code": "EVALUATOR_RESULT_INVALID"})


@kind("custom")
async def custom(spec: Custom, ctx: CheckContext) -> AssertionResult:
    """A user evaluator registered with `@convlab.evaluator(name)` decides.

    It is called as `fn(ctx, parameters)` (or `fn(ctx)`), sync or async, and returns a
    bool, a dict with a boolean `passed` (and `message`, `evidence`), or an AssertionResult.
    Unknown names are rejected before any case runs; an invalid result or an exception is
    an error, never a pass or a fail.
    """
    expected = {"evaluator": spec.evaluator, "parameters": spec.parameters}
    try:
        fn = EVALUATORS.get(spec.evaluator)
    except UnknownNameError as exc:
        message = f"EVALUATOR_NOT_FOUND: {exc}"
        return error_result(
            spec, message, expected=expected, details={"code": "EVALUATOR_NOT_FOUND"}
        )
    try:
        value = await _call_evaluator(fn, ctx, spec.parameters)
    except Exception as exc:
        msg = f"evaluator {spec.evaluator!r} failed: {error_text(exc)}"
        # intention-kernel: an evaluator that throws is EVALUATOR_FAILED (its message is not
        # copied there; convlab keeps it, for the person fixing the evaluator)
        details = {"traceback": traceback.format_exc(limit=5), "code": "EVALUATOR_FAILED"}
        return error_result(
            spec,
            msg,
            blame_of(exc, "suite"),
            expected=expected,
            details=details,
            error_info=error_info(exc),
        )
    return _from_evaluator(spec, value, expected)
