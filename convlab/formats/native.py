"""convlab's own YAML/JSON form of a Suite: exactly the model, marked by `convlab_suite: 1`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from convlab.formats._base import Problems, dotted, line_of, register_format, yaml_with_lines
from convlab.formats._suite_json_lines import deepest_line, locate
from convlab.formats._unicode import Loc, lone_json_escape, mend
from convlab.model.suite import NATIVE_TAG, Source, Suite

__all__ = ["load_native"]


def _sniff(path: Path, text: str) -> bool:
    return NATIVE_TAG in text[:2000]


@register_format("native", (".yaml", ".yml", ".json"), _sniff)
def load_native(path: Path, text: str) -> Suite:
    """Read a suite written by `Suite.to_yaml()` / `Suite.to_json()`."""
    problems = Problems(str(path))
    data: Any
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.add(exc.lineno, "", f"invalid JSON: {exc.msg}")
            problems.raise_if_any()
        if lone_json_escape(text):
            data = _mended(text, data, problems)
    else:
        data = yaml_with_lines(text, problems)
        if data is None:  # not YAML (else its problems are reported with the model's)
            problems.raise_if_any()
    if not isinstance(data, dict):
        problems.add(1, "", "a native suite must be a mapping")
        problems.raise_if_any()
    version = data.pop(NATIVE_TAG, None)
    if version != 1:
        problems.add(1, NATIVE_TAG, f"unsupported native suite version {version!r} (expected 1)")
        problems.raise_if_any()
    _unique_ids(data, problems)
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        problems.add_validation(exc, None, lines=lambda loc: line_of(data, loc))
        problems.raise_if_any()
        raise AssertionError("unreachable") from None
    problems.raise_if_any()
    if not suite.sources:
        suite.sources.append(Source(file=str(path), line=None, format="native"))
    return suite


def _mended(text: str, data: Any, problems: Problems) -> Any:
    """The JSON data with text that is not Unicode mended, each such value a problem at its
    line (`convlab.formats._unicode.mend`)."""
    found: list[tuple[Loc, str]] = []
    data = mend(data, lambda loc, message: found.append((loc, message)), "JSON")
    lines = locate(text, [loc for loc, _ in found])
    for loc, message in found:
        problems.add(deepest_line(lines, loc), dotted(loc), message)
    return data


def _unique_ids(data: Any, problems: Problems) -> None:
    """Case ids are unique in a suite, checkpoint ids within their case (as in every format).

    Read from the raw data, so a duplicate is reported alongside any other problem.
    """
    cases = data.get("cases") if isinstance(data, dict) else None
    first: dict[Any, int] = {}
    for i, case in enumerate(cases if isinstance(cases, list) else []):
        if not isinstance(case, dict):
            continue
        cid = case.get("id")
        if isinstance(cid, str) and cid in first:
            problems.add(
                line_of(data, ("cases", i, "id")),
                f"cases[{i}].id",
                f"duplicate case id {cid!r} (also cases[{first[cid]}])",
            )
        first.setdefault(cid, i)
        seen: set[Any] = set()
        checkpoints = case.get("checkpoints")
        for j, cp in enumerate(checkpoints if isinstance(checkpoints, list) else []):
            cpid = cp.get("id") if isinstance(cp, dict) else None
            if isinstance(cpid, str) and cpid in seen:
                problems.add(
                    line_of(data, ("cases", i, "checkpoints", j, "id")),
                    f"cases[{i}].checkpoints[{j}].id",
                    f"duplicate checkpoint id {cpid!r}",
                )
            seen.add(cpid)
