"""JSON-data limits of the kernel's `boundedJson`, and Python data checked as JSON.

`bounded_json` runs on what `json.loads` returned (no cycles possible, only JSON types), so
it only counts values and nesting, in one pass that keeps no path unless the limit is hit.
`to_json` is for assertions written as Python dicts (`convlab.check`): it also rejects
non-JSON values and cycles, and returns a detached copy.
"""

from __future__ import annotations

import math
from typing import Any

from convlab.errors import JSONLimit
from convlab.formats._suite_json_check import CYCLE, LIMIT, Issue, Issues
from convlab.formats._suite_json_lines import Loc

__all__ = ["MAX_DEPTH", "MAX_NODES", "bounded_json", "to_json"]

MAX_NODES = 500_000
MAX_DEPTH = 60


def bounded_json(value: Any) -> Issue | None:
    """The kernel's `boundedJson`: > 500,000 values or nesting > 60 is a data-limit problem.

    Runs on data `json.loads` produced (no cycles possible); one pass, no path kept unless
    the limit is hit.
    """
    if type(value) is not dict and type(value) is not list:
        return None
    try:
        count = _size(value, 0)
    except JSONLimit as exc:
        return Issue(tuple(reversed(exc.loc)), str(exc))
    if count > MAX_NODES:
        return Issue((), f"the suite holds {count} JSON values, more than {MAX_NODES} [{LIMIT}]")
    return None


def _size(item: Any, depth: int) -> int:
    values = item.values() if type(item) is dict else item
    if depth >= MAX_DEPTH and values:
        exc = JSONLimit(f"JSON nested more than {MAX_DEPTH} levels deep [{LIMIT}]")
        exc.loc.append(next(iter(item)) if type(item) is dict else 0)
        raise exc
    count = 1
    for child in values:
        kind = type(child)
        if kind is dict or kind is list:
            try:
                count += _size(child, depth + 1)
            except JSONLimit as exc:
                exc.loc.append(_key_of(item, child))
                raise
        else:
            count += 1
    return count


def _key_of(container: Any, child: Any) -> int | str:
    pairs = container.items() if type(container) is dict else enumerate(container)
    return next(k for k, v in pairs if v is child)


def to_json(value: Any, loc: Loc, issues: Issues) -> Any:
    """A detached JSON copy of Python data (tuples become arrays); problems for the rest.

    For assertions written in Python (`convlab.check`): only JSON values, no cycles, at most
    500,000 values and 60 levels, as the kernel's `boundedJson`.
    """
    budget = [MAX_NODES]
    try:
        return _copy(value, loc, issues, 0, set(), budget)
    except JSONLimit as exc:
        issues.add(loc, str(exc))
        return None


def _copy(
    value: Any, loc: Loc, issues: Issues, depth: int, active: set[int], budget: list[int]
) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise JSONLimit(f"more than {MAX_NODES} JSON values [{LIMIT}]")
    if depth > MAX_DEPTH:
        issues.add(loc, f"JSON nested more than {MAX_DEPTH} levels deep [{LIMIT}]")
        return None
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            issues.add(loc, f"{value!r} is not a JSON value")
        return value
    if not isinstance(value, dict | list | tuple):
        issues.add(loc, f"not a JSON value ({type(value).__name__})")
        return None
    if id(value) in active:
        issues.add(loc, f"the value contains itself (a cycle) [{CYCLE}]")
        return None
    active.add(id(value))
    try:
        if isinstance(value, dict):
            return _copy_dict(value, loc, issues, depth, active, budget)
        return [_copy(v, (*loc, i), issues, depth + 1, active, budget) for i, v in enumerate(value)]
    finally:
        active.discard(id(value))


def _copy_dict(
    value: dict[Any, Any], loc: Loc, issues: Issues, depth: int, active: set[int], budget: list[int]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            issues.add(loc, f"object keys must be strings, got {key!r}")
            continue
        out[key] = _copy(item, (*loc, key), issues, depth + 1, active, budget)
    return out
