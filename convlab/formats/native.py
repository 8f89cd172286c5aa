"""convlab's own YAML/JSON form of a Suite: exactly the model, marked by `convlab_suite: 1`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from convlab.formats._base import Problems, line_of, register_format, yaml_with_lines
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
    else:
        data = yaml_with_lines(text, problems)
        problems.raise_if_any()
    if not isinstance(data, dict):
        problems.add(1, "", "a native suite must be a mapping")
        problems.raise_if_any()
    version = data.pop(NATIVE_TAG, None)
    if version != 1:
        problems.add(1, NATIVE_TAG, f"unsupported native suite version {version!r} (expected 1)")
        problems.raise_if_any()
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        problems.add_validation(exc, None, lines=lambda loc: line_of(data, loc))
        problems.raise_if_any()
        raise AssertionError("unreachable") from None
    if not suite.sources:
        suite.sources.append(Source(file=str(path), line=None, format="native"))
    return suite
