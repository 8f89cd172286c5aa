"""HoloDeck `expected_tools` (mixed list, arg matchers) and `files` entries, checked and mapped.

Mirrors `_normalize_expected_tools_list`, `_build_expected_tool` and `_coerce_arg_matcher`
(holodeck/models/test_case.py): a str is a bare name; a mapping is `{name, args?, count?}`;
each `args` value is a matcher by SHAPE: a mapping with `fuzzy` or `regex` is a fuzzy/regex
matcher, anything else a literal. Where HoloDeck stops at the first problem, every problem is
reported here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from convlab.formats._base import did_you_mean, plain
from convlab.formats._yaml_common import HINT, At, validate_model
from convlab.model.assertions import ArgMatcher, ExpectedTool, ExpectedTools
from convlab.model.suite import FileRef

__all__ = ["MAX_FILES", "arg_matcher", "expected_tools", "file_refs"]

MAX_FILES = 10
_TOOL_KEYS = ("name", "args", "count")
_FILE_TYPES = ("csv", "excel", "image", "pdf", "powerpoint", "text", "word")


def expected_tools(value: Any, at: At) -> ExpectedTools | None:
    """The `expected_tools` list as one ExpectedTools assertion (None when not given).

    `expected_tools: []` stays an empty assertion: HoloDeck records it as checked and passed.
    """
    if value is None:
        return None
    if not isinstance(value, list):
        at.error("expected_tools must be a list")
        return None
    tools: list[ExpectedTool] = []
    for i, raw in enumerate(value):
        where = at.item(value, i)
        if isinstance(raw, str):
            if raw:
                tools.append(ExpectedTool(name=raw, bare=True))
            else:
                where.error("tool name must be a non-empty string")
        elif isinstance(raw, dict):
            tool = _object_tool(raw, where)
            if tool is not None:
                tools.append(tool)
        else:
            where.error(f"expected_tools entries must be str or object, got {type(raw).__name__}")
    return ExpectedTools(tools=tools)


def _object_tool(raw: dict[Any, Any], at: At) -> ExpectedTool | None:
    ok = True
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        at.key(raw, "name").error("name must be a non-empty string")
        ok = False
    count = raw.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        at.key(raw, "count").error("count must be an integer >= 1")
        ok = False
    args_ok, args = _args(raw.get("args"), at.key(raw, "args"))
    extra = sorted(str(k) for k in raw if k not in _TOOL_KEYS)
    if extra:
        hint = did_you_mean(extra[0], _TOOL_KEYS, HINT)
        at.error(f"unknown keys on ExpectedTool: {extra}{hint}")
    if not (ok and args_ok) or extra:
        return None
    return ExpectedTool(name=str(name), args=args, count=count, bare=False)


def _args(raw: Any, at: At) -> tuple[bool, dict[str, ArgMatcher] | None]:
    """(all valid, the matchers by argument name or None when `args` is absent)."""
    if raw is None:
        return True, None
    if not isinstance(raw, dict):
        at.error("args must be a mapping")
        return False, None
    out: dict[str, ArgMatcher] = {}
    ok = True
    for key, value in raw.items():
        matcher = arg_matcher(value, at.key(raw, key))
        if matcher is None:
            ok = False
        else:
            out[str(key)] = matcher
    return ok, out


def arg_matcher(value: Any, at: At) -> ArgMatcher | None:
    """Coerce one `args` value by shape; None (after reporting) when it is malformed."""
    if isinstance(value, dict) and ("fuzzy" in value or "regex" in value):
        if "fuzzy" in value and "regex" in value:
            at.error("matcher dict must have exactly one of 'fuzzy' or 'regex', not both")
            return None
        mode = "fuzzy" if "fuzzy" in value else "regex"
        others = sorted(str(k) for k in value if k != mode)
        if others:
            at.error(f"matcher dict has unknown keys: {others}")
            return None
        pattern, where = value[mode], at.key(value, mode)
        if not isinstance(pattern, str):
            where.error(f"{mode} pattern must be a string, got {type(pattern).__name__}")
            return None
        if mode == "regex":
            try:
                re.compile(pattern)
            except (re.error, OverflowError, RecursionError, ValueError) as exc:
                where.error(f"cannot compile regex: {exc}")
                return None
        return ArgMatcher(mode=mode, value=pattern)
    return ArgMatcher(mode="literal", value=plain(value))


class _FileInput(BaseModel):
    """Mirror of HoloDeck's FileInput (same fields, same messages)."""

    model_config = ConfigDict(extra="forbid")
    path: str | None = None
    url: str | None = None
    type: str
    description: str | None = None
    pages: list[int] | None = None
    sheet: str | None = None
    range: str | None = None
    cache: bool | None = None

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        if v not in _FILE_TYPES:
            raise ValueError(f"type must be one of {list(_FILE_TYPES)}, got {v}")
        return v

    @field_validator("pages")
    @classmethod
    def _pages(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and not all(p > 0 for p in v):
            raise ValueError("pages must be positive integers")
        return v

    @model_validator(mode="after")
    def _path_or_url(self) -> _FileInput:
        if self.path and self.url:
            raise ValueError("Cannot provide both 'path' and 'url'")
        if not self.path and not self.url:
            raise ValueError("Must provide either 'path' or 'url'")
        return self


def file_refs(value: Any, at: At, base: Path, owner: str) -> list[FileRef] | None:
    """The `files` list as FileRefs; a local path is made absolute against `base`.

    A URL is kept as the FileRef's `path`, with `extra["url"] = True`. `owner` ("test case"
    or "turn") words the HoloDeck limit message ("Maximum 10 files per turn").
    """
    if value is None:
        return None
    if not isinstance(value, list):
        at.error("Input should be a valid list")
        return None
    if len(value) > MAX_FILES:
        at.error(f"Maximum {MAX_FILES} files per {owner}")
    refs: list[FileRef] = []
    for i, raw in enumerate(value):
        spec = validate_model(_FileInput, raw, at.item(value, i))
        if spec is not None:
            refs.append(_ref(spec, base))
    return refs


def _ref(spec: _FileInput, base: Path) -> FileRef:
    extra: dict[str, Any] = {
        k: v
        for k, v in spec.model_dump(include={"pages", "sheet", "range", "cache"}).items()
        if v is not None
    }
    if spec.url:
        extra["url"] = True
        location = spec.url
    else:
        location = os.path.abspath(os.path.join(base, str(spec.path)))
    return FileRef(path=location, type=spec.type, description=spec.description, extra=extra)
