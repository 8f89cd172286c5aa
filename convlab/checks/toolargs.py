"""HoloDeck's `expected_tools` and its argument matchers (HoloDeck's executor.py and
lib/test_runner/tool_arg_matcher.py; docs/holodeck.md).

Names match as a case-sensitive substring of the called tool's name. Bare names (and
objects with neither `args` nor a `count` above 1) take the fast path: each must be a
substring of some call in this turn. Other entries count the calls whose name matches
and whose every asserted argument matches; at least `count` of them must.

Matchers, exactly as HoloDeck's tool_arg_matcher: literal (ints equal floats, bools are
strict, lists element-wise, dicts need the same keys, strings exact), fuzzy (strip,
lower-case, delete `,` `_` and U+202F NARROW NO-BREAK SPACE, then collapse every other
whitespace run, ASCII space, tab, newline or U+00A0, to one space; numbers compare when both
sides parse, a trailing `%` divides by 100), regex (`re.fullmatch` over `str(actual)`).
So `hello world` matches `hello\tworld`, but `Hello World` does not match `helloworld` and
`New_York` does not match `new york` (HoloDeck 0.7.1 `_normalize`; an ASCII space is kept).

A call's arguments are read as HoloDeck's OpenAI backend reads them
(`_parse_tool_arguments`): an object as is, a JSON object text parsed, any other text
(invalid JSON, or JSON that is not an object) wrapped as `{"raw": <the text>}` so an
`args: {raw: ...}` assertion can still reach it; anything else counts as no arguments.
"""

from __future__ import annotations

import math
import re
from typing import Any

from convlab.checks._core import CheckContext, kind, result
from convlab.checks._regex import fullmatch
from convlab.checks.tools import holodeck_arguments
from convlab.model.assertions import ArgMatcher, ExpectedTool, ExpectedTools
from convlab.model.conversation import ToolCall
from convlab.model.records import AssertionResult

__all__ = [
    "evaluate_entry",
    "expected_tools",
    "match_arg",
    "match_fuzzy",
    "match_literal",
    "match_regex",
]

_SEPARATORS = re.compile("[,_\u202f]")
"""HoloDeck's `_SEPARATOR_RE`: comma, underscore, U+202F (not the ASCII space)."""
_WHITESPACE = re.compile(r"\s+")


def match_literal(expected: Any, actual: Any) -> bool:
    """Literal equality: 206588 == 206588.0, [1, 2] == [1.0, 2.0], True != 1, "1" != 1."""
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            match_literal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, dict) and isinstance(actual, dict):
        return set(expected) == set(actual) and all(
            match_literal(expected[k], actual[k]) for k in expected
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return float(expected) == float(actual)
    return bool(expected == actual)


def _normalize(text: str) -> str:
    """HoloDeck's order: strip, lower-case, delete separators, then collapse whitespace."""
    return _WHITESPACE.sub(" ", _SEPARATORS.sub("", text.strip().lower()))


def _number(text: str) -> float | None:
    percent = text.endswith("%")
    if percent:
        text = text[:-1].strip()
    try:
        value = float(text.replace(" ", ""))
    except ValueError:
        return None
    return value / 100 if percent else value


def match_fuzzy(pattern: str, actual: Any) -> bool:
    """Case-insensitive, `,` `_` U+202F deleted, whitespace runs equal; numeric when both parse.

    "14.14%" ~ 0.1414 and "206,588" ~ 206588.0, as HoloDeck 0.7.1's `match_fuzzy`.
    """
    want, got = _normalize(pattern), _normalize(str(actual))
    a, b = _number(want), _number(got)
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-9)
    return want == got


def match_regex(pattern: str, actual: Any) -> bool:
    """Anchored: the whole of `str(actual)` must match (`str(206588.0)` is "206588.0")."""
    return fullmatch(pattern, str(actual)) is not None  # within a time limit (_regex.py)


def match_arg(matcher: ArgMatcher, actual: Any) -> tuple[bool, str | None]:
    """(matched, reason when not)."""
    if matcher.mode == "fuzzy":
        if match_fuzzy(matcher.value, actual):
            return True, None
        return False, f"expected ≈{matcher.value!r}, got {actual!r}"
    if matcher.mode == "regex":
        if match_regex(matcher.value, actual):
            return True, None
        return False, f"expected regex {matcher.value!r}, got {actual!r}"
    if match_literal(matcher.value, actual):
        return True, None
    return False, f"expected {matcher.value!r}, got {actual!r}"


def _call_matches(call: ToolCall, args: dict[str, ArgMatcher]) -> tuple[bool, str | None]:
    actual = holodeck_arguments(call.arguments)
    for key, matcher in args.items():
        if key not in actual:
            return False, f"arg '{key}' missing"
        ok, reason = match_arg(matcher, actual[key])
        if not ok:
            return False, f"arg '{key}' mismatch: {reason}"
    return True, None


def _wire_args(args: dict[str, ArgMatcher]) -> dict[str, Any]:
    return {k: m.value if m.mode == "literal" else {m.mode: m.value} for k, m in args.items()}


def evaluate_entry(entry: ExpectedTool, calls: list[ToolCall]) -> dict[str, Any]:
    """HoloDeck's arg_match_details entry for one object-form expected tool."""
    args = entry.args or {}
    satisfying: list[int] = []
    last_reason: str | None = None
    named = [i for i, c in enumerate(calls) if entry.name in c.name]
    for i in named:
        ok, why = _call_matches(calls[i], args) if args else (True, None)
        if ok:
            satisfying.append(i)
        else:
            last_reason = why
    reason: str | None = None
    if len(satisfying) < entry.count:
        if not named:
            reason = f"no call to '{entry.name}' found"
        elif not satisfying and last_reason:
            reason = last_reason
        else:
            reason = f"expected {entry.count} matching call(s), got {len(satisfying)}"
    return {
        "expected_tool": entry.name,
        "args_asserted": _wire_args(args),
        "matched_call_index": satisfying[0] if reason is None else -1,
        "unmatched_reason": reason,
    }


def _render(entry: ExpectedTool) -> str:
    marks = {"literal": "=", "fuzzy": "≈", "regex": "~"}
    return ", ".join(f"{k}{marks[m.mode]}{m.value}" for k, m in (entry.args or {}).items())


def _fast(entry: ExpectedTool) -> bool:
    return entry.bare or (entry.args is None and entry.count == 1)


@kind("expected_tools")
def expected_tools(spec: ExpectedTools, ctx: CheckContext) -> AssertionResult:
    """These tools were called in this turn (HoloDeck `expected_tools`).

    Entries are bare names or `{name, args?, count?}`. Names match as substrings; extra or
    unexpected calls are ignored, order too. `args` values are matchers: a literal, or
    `{fuzzy: "..."}`, or `{regex: "..."}` (anchored). `count` is the least number of calls
    that must satisfy every asserted argument. An empty list passes.
    """
    calls = ctx.observation.tool_calls
    names = [c.name for c in calls]
    missing = [e.name for e in spec.tools if _fast(e) and not any(e.name in n for n in names)]
    problems = (
        [f"expected tool(s) not called in this turn: {', '.join(missing)}"] if missing else []
    )
    details = []
    for entry in (e for e in spec.tools if not _fast(e)):
        detail = evaluate_entry(entry, calls)
        details.append(detail)
        if detail["unmatched_reason"] is not None:
            problems.append(
                f"expected {entry.name}({_render(entry)}): {detail['unmatched_reason']}"
            )
    expected = [
        e.name if _fast(e) else {"name": e.name, "args": _wire_args(e.args or {}), "count": e.count}
        for e in spec.tools
    ]
    actual = [{"name": c.name, "arguments": c.arguments} for c in calls]
    msg = (
        "; ".join(problems)
        or f"expected tools called: {', '.join(e.name for e in spec.tools) or 'none'}"
    )
    return result(
        spec,
        not problems,
        msg,
        expected=expected,
        actual=actual,
        details={"arg_match_details": details, "tools_called": names},
    )
