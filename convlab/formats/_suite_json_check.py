"""Validation of JSON evaluation-suite values (intention-kernel `schema.ts`), kept fast.

The rules are those of intention-kernel's `parseEvaluationSuite`
(src/testing/evaluation/schema.ts). Each validator reads a raw value (what
`json.loads` gave), records every problem it finds as an `Issue` (location + message)
and returns the value in convlab's native spelling, ready for one fast pydantic
validation. Nothing here knows about lines: locations are turned into lines later, and
only when there is a problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from convlab._readable import json_type
from convlab.formats._base import did_you_mean
from convlab.formats._suite_json_lines import Loc

__all__ = [
    "CYCLE",
    "HINT",
    "INVALID",
    "LIMIT",
    "Fields",
    "Issue",
    "Issues",
    "array",
    "assertion",
    "assertion_list",
    "ident",
    "integer",
    "obj",
    "string",
]

HINT = " (did you mean {!r}?)"
"""This format's did-you-mean wording (`_base.did_you_mean` with `fold=True`, so that
`write_policy` finds `writePolicy`)."""
INVALID = "EVALUATION_SUITE_INVALID"
LIMIT = "EVALUATION_DATA_LIMIT"
CYCLE = "EVALUATION_DATA_CYCLE"
MAX_SAFE = 2**53 - 1
OPERATORS = ("equals", "matches", "contains", "exists", "absent", "gte", "lte", "length")
NUMERIC = ("gte", "lte", "length")
UNSAFE_KEYS = ("__proto__", "prototype", "constructor")
KINDS = ("check", "all", "any", "not", "custom")


class Fields:
    """The fields an object may have (in documentation order) and those it must have."""

    __slots__ = ("_allowed", "_required", "allowed", "required")

    def __init__(self, allowed: tuple[str, ...], required: tuple[str, ...]) -> None:
        self.allowed, self.required = allowed, required
        self._allowed, self._required = frozenset(allowed), frozenset(required)

    def check(self, data: dict[str, Any], loc: Loc, issues: Issues) -> None:
        """Unknown fields (with a did-you-mean) and missing required fields."""
        keys = data.keys()
        if keys <= self._allowed and self._required <= keys:
            return
        for key in data:
            if key not in self._allowed:
                hint = did_you_mean(key, self.allowed, HINT, fold=True)
                names = ", ".join(self.allowed)
                issues.add(
                    (*loc, key), f"unknown field {key!r}{hint}; allowed fields: {names} [{INVALID}]"
                )
        for key in self.required:
            if key not in data:
                hint = " (a JSON object; {} when there are none)" if key == "parameters" else ""
                issues.add((*loc, key), f"missing required field {key!r}{hint}")


_BASE = ("id", "label", "kind")
FIELDS = {
    "check": Fields((*_BASE, "path", "operator", "value"), ("id", "kind", "path", "operator")),
    "all": Fields((*_BASE, "assertions"), ("id", "kind", "assertions")),
    "any": Fields((*_BASE, "assertions"), ("id", "kind", "assertions")),
    "not": Fields((*_BASE, "assertion"), ("id", "kind", "assertion")),
    "custom": Fields(
        (*_BASE, "evaluator", "parameters"), ("id", "kind", "evaluator", "parameters")
    ),
}
_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
JS_SPACE += "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""What JavaScript's String.prototype.trim removes (zod `.trim()`)."""


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem at a location; `also` is the first occurrence of a duplicated id."""

    loc: Loc
    message: str
    also: Loc | None = None


class Issues(list[Issue]):
    """Every problem found so far, in document order."""

    def add(self, loc: Loc, message: str, also: Loc | None = None) -> None:
        """Record one problem."""
        self.append(Issue(loc, message, also))


def obj(value: Any, loc: Loc, issues: Issues, what: str = "an object") -> dict[str, Any] | None:
    """The value if it is a JSON object, else a problem."""
    if type(value) is dict:
        return value
    issues.add(loc, f"expected {what}, got {json_type(value)}")
    return None


_GOOD_IDS: set[str] = set()
"""Identifiers already seen valid (suites repeat step and assertion ids a lot)."""


def ident(value: Any, loc: Loc, issues: Issues) -> str | None:
    """An identifier: 1-160 characters, `^[A-Za-z0-9][A-Za-z0-9_.:-]*$`."""
    if type(value) is str and value in _GOOD_IDS:
        return value
    if type(value) is not str:
        issues.add(loc, f"expected an identifier string, got {json_type(value)}")
        return None
    if 0 < len(value) <= 160 and _IDENT.fullmatch(value):
        if len(_GOOD_IDS) > 100_000:
            _GOOD_IDS.clear()
        _GOOD_IDS.add(value)
        return value
    if not 0 < len(value) <= 160:
        issues.add(loc, f"an identifier needs 1-160 characters, got {len(value)}")
    else:
        issues.add(
            loc,
            f"invalid identifier {value[:60]!r}: start with a letter or digit, then use only "
            "letters, digits, '_', '.', ':' or '-'",
        )
    return None


def string(
    value: Any, loc: Loc, issues: Issues, *, most: int, least: int = 0, trim: bool = False
) -> str | None:
    """A string of `least`..`most` characters, trimmed first when `trim` (zod `.trim()`)."""
    if type(value) is not str:
        issues.add(loc, f"expected a string, got {json_type(value)}")
        return None
    text = value.strip(JS_SPACE) if trim else value
    # Unicode code points, as zod 4 counts `.min`/`.max` (checked against zod 4.6.7: the
    # kernel's schema.ts takes "😀" for `z.string().max(1)`), i.e. Python's len
    size = len(text)
    if size < least:
        issues.add(loc, "must not be empty" + (" or only spaces" if trim else ""))
        return None
    if size > most:
        issues.add(loc, f"must be at most {most} characters, got {size}")
        return None
    return text


def integer(value: Any) -> int | None:
    """A JSON integer (a whole float such as 2.0 counts, as in JavaScript); None otherwise."""
    if type(value) is int:
        return value if -MAX_SAFE <= value <= MAX_SAFE else None
    if type(value) is float and value.is_integer() and abs(value) <= MAX_SAFE:
        return int(value)
    return None


def array(
    value: Any, loc: Loc, issues: Issues, *, what: str, least: int = 0, most: int
) -> list[Any]:
    """The value if it is an array within bounds (else a problem); [] when not an array."""
    if type(value) is not list:
        issues.add(loc, f"expected an array of {what}, got {json_type(value)}")
        return []
    if len(value) < least:
        issues.add(loc, f"needs at least {least} {_noun(what, least)}, got {len(value)}")
    elif len(value) > most:
        issues.add(loc, f"allows at most {most} {what}, got {len(value)}")
    return value


def _noun(plural: str, count: int) -> str:
    return plural if count != 1 else plural.removesuffix("s")


def assertion_list(value: Any, loc: Loc, issues: Issues, least: int = 0) -> list[dict[str, Any]]:
    """An assertion array (`assertions`, up to 200; all/any children 1-100), ids unique."""
    most = 100 if least else 200
    items = array(value, loc, issues, what="assertions", least=least, most=most)
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        spec = assertion(item, (*loc, i), issues)
        if spec is not None:
            out.append(spec)
        aid = item.get("id") if type(item) is dict else None
        if type(aid) is str:
            if aid in seen:
                issues.add(
                    (*loc, i, "id"),
                    f"duplicate assertion id {aid!r} among sibling assertions",
                    also=(*loc, seen[aid], "id"),
                )
            else:
                seen[aid] = i
    return out


def assertion(value: Any, loc: Loc, issues: Issues) -> dict[str, Any] | None:
    """One assertion (check/all/any/not/custom) in native spelling, or None if invalid."""
    data = obj(value, loc, issues, "an assertion object")
    if data is None:
        return None
    kind = data.get("kind")
    if type(kind) is not str or kind not in KINDS:
        _bad_kind(data, loc, issues)
        return None
    if kind == "check":
        fast = _fast_check(data)
        if fast is not None:
            return fast
    before = len(issues)
    FIELDS[kind].check(data, loc, issues)
    out: dict[str, Any] = {"kind": kind}
    if "id" in data:
        out["id"] = ident(data["id"], (*loc, "id"), issues)
    if "label" in data:
        out["label"] = string(data["label"], (*loc, "label"), issues, most=500)
    _BODIES[kind](data, loc, issues, out)
    return out if len(issues) == before else None


def _bad_kind(data: dict[str, Any], loc: Loc, issues: Issues) -> None:
    kinds = ", ".join(KINDS)
    if "kind" not in data:
        issues.add((*loc, "kind"), f"missing required field 'kind' (one of {kinds})")
    elif type(data["kind"]) is not str:
        issues.add((*loc, "kind"), f"expected a string, got {json_type(data['kind'])}")
    else:
        hint = did_you_mean(data["kind"], KINDS, HINT, fold=True)
        issues.add((*loc, "kind"), f"unknown assertion kind {data['kind']!r}{hint}; one of {kinds}")
    if "id" in data:
        ident(data["id"], (*loc, "id"), issues)


_CHECK_KEYS = frozenset(FIELDS["check"].allowed)
_PLAIN_OPS = frozenset(("equals", "matches", "contains"))
_NO_VALUE_OPS = frozenset(("exists", "absent"))


def _fast_check(data: dict[str, Any]) -> dict[str, Any] | None:
    """The common, plainly valid `check` in one call; None sends it to the full rules.

    Never accepts what the full rules reject (a property test compares the two).
    """
    aid, path, op = data.get("id"), data.get("path"), data.get("operator")
    if not (data.keys() <= _CHECK_KEYS and type(aid) is str and aid in _GOOD_IDS):
        return None
    if type(op) is not str:
        return None
    if type(path) is not list or len(path) > 40:
        return None
    for seg in path:
        if type(seg) is not str or len(seg) > 120 or seg in UNSAFE_KEYS:
            return None
    out = {"kind": "check", "id": aid, "path": path, "operator": op}
    if op in _PLAIN_OPS:
        if "value" not in data:
            return None
        out["value"] = data["value"]
    elif op not in _NO_VALUE_OPS:
        return None
    if "label" in data:
        label = data["label"]
        if type(label) is not str or len(label) > 250:
            return None
        out["label"] = label
    return out


def _check(data: dict[str, Any], loc: Loc, issues: Issues, out: dict[str, Any]) -> None:
    if "path" in data:
        out["path"] = _path(data["path"], (*loc, "path"), issues)
    op = data.get("operator")
    if "operator" in data and (type(op) is not str or op not in OPERATORS):
        got = repr(op) if type(op) is str else json_type(op)
        hint = did_you_mean(op, OPERATORS, HINT, fold=True) if type(op) is str else ""
        issues.add(
            (*loc, "operator"), f"unknown operator {got}{hint}; one of {', '.join(OPERATORS)}"
        )
        return
    if op is None:
        return
    out["operator"] = op
    if op in ("exists", "absent"):
        return  # a value is allowed but meaningless; the kernel ignores it
    if "value" not in data:
        issues.add((*loc, "value"), f"operator {op!r} needs a 'value'")
        return
    out["value"] = _operand(op, data["value"], (*loc, "value"), issues)


def _operand(op: str, value: Any, loc: Loc, issues: Issues) -> Any:
    if op not in NUMERIC:
        return value
    if type(value) not in (int, float):
        issues.add(loc, f"operator {op!r} needs a number value, got {json_type(value)}")
    elif op == "length":
        whole = integer(value)
        if whole is None or whole < 0:
            issues.add(loc, f"operator 'length' needs a non-negative integer value, got {value!r}")
        return whole
    return value


def _path(value: Any, loc: Loc, issues: Issues) -> list[str | int]:
    segments = array(value, loc, issues, what="path segments", most=40)
    out: list[str | int] = []
    for i, seg in enumerate(segments):
        if type(seg) is str:
            if seg in UNSAFE_KEYS:
                issues.add((*loc, i), f"path segment {seg!r} is not allowed (unsafe key)")
            elif len(seg) > 240:  # code points, as zod 4 counts
                issues.add((*loc, i), f"a path segment has at most 240 characters, got {len(seg)}")
            out.append(seg)
            continue
        whole = integer(seg)
        if whole is None or whole < 0:
            issues.add(
                (*loc, i),
                f"a path segment is a string or a non-negative integer, got {seg!r}",
            )
        out.append(whole if whole is not None else 0)
    return out


def _group(data: dict[str, Any], loc: Loc, issues: Issues, out: dict[str, Any]) -> None:
    if "assertions" in data:
        out["assertions"] = assertion_list(data["assertions"], (*loc, "assertions"), issues, 1)


def _not(data: dict[str, Any], loc: Loc, issues: Issues, out: dict[str, Any]) -> None:
    if "assertion" in data:
        out["assertion"] = assertion(data["assertion"], (*loc, "assertion"), issues)


def _custom(data: dict[str, Any], loc: Loc, issues: Issues, out: dict[str, Any]) -> None:
    if "evaluator" in data:
        out["evaluator"] = ident(data["evaluator"], (*loc, "evaluator"), issues)
    if "parameters" in data:
        out["parameters"] = obj(data["parameters"], (*loc, "parameters"), issues, "a JSON object")


_BODIES = {"check": _check, "all": _group, "any": _group, "not": _not, "custom": _custom}
