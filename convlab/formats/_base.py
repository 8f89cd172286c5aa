"""Shared loader plumbing: the format registry, problem collection, YAML/JSON with line numbers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from convlab.errors import Problem, SuiteError
from convlab.model.suite import Suite
from convlab.registry import Registry

__all__ = [
    "FORMATS",
    "Format",
    "LineDict",
    "LineList",
    "Problems",
    "dotted",
    "line_of",
    "register_format",
    "yaml_with_lines",
]


@dataclass(frozen=True)
class Format:
    """A registered suite format: which files it claims and how it reads them."""

    name: str
    suffixes: tuple[str, ...]
    sniff: Callable[[Path, str], bool]
    """Claims a file by its content (called only for a matching suffix)."""
    load: Callable[[Path, str], Suite]
    """Reads the file's text into a Suite or raises SuiteError with every problem."""


FORMATS: Registry[Format] = Registry("suite format")


def register_format(
    name: str, suffixes: tuple[str, ...], sniff: Callable[[Path, str], bool]
) -> Callable[[Callable[[Path, str], Suite]], Callable[[Path, str], Suite]]:
    """Register a loader function `load(path, text) -> Suite` as format `name`."""

    def deco(fn: Callable[[Path, str], Suite]) -> Callable[[Path, str], Suite]:
        FORMATS.add(name, Format(name, suffixes, sniff, fn))
        return fn

    return deco


def dotted(loc: tuple[int | str, ...] | list[int | str], prefix: str = "") -> str:
    """Join a location as a field path: ('turns', 2, 'args', 'a') -> 'turns[2].args.a'."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass
class Problems:
    """Collects every problem in one file, then raises them together."""

    file: str
    items: list[Problem] = field(default_factory=list)

    def add(self, line: int | None, path: str, message: str) -> None:
        """Record one problem."""
        self.items.append(Problem(self.file, line, path, message))

    def add_validation(
        self,
        exc: ValidationError,
        line: int | None,
        prefix: str = "",
        lines: Callable[[tuple[int | str, ...]], int | None] | None = None,
    ) -> None:
        """Record each error of a pydantic ValidationError with its field path."""
        for err in exc.errors():
            loc = drop_union_tags(err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            at = lines(loc) if lines else None
            self.add(at if at is not None else line, dotted(loc, prefix), msg)

    def raise_if_any(self) -> None:
        """Raise SuiteError if anything was recorded."""
        if self.items:
            raise SuiteError(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)


def drop_union_tags(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A pydantic error location without the union's tags, as the user wrote the path.

    pydantic inserts the discriminator value (`regex`, `check`, ...) after the list index or
    the `assertion` key that holds a union member, and `function-after[...]` wrappers.
    """
    from convlab.model.assertions import KIND_NAMES

    out: list[int | str] = []
    for part in loc:
        if isinstance(part, str) and "[" in part and "(" in part:
            continue
        follows_union = bool(out) and (isinstance(out[-1], int) or out[-1] == "assertion")
        if isinstance(part, str) and part in KIND_NAMES and follows_union:
            continue
        out.append(part)
    return tuple(out)


class LineDict(dict[str, Any]):
    """A YAML mapping that remembers its own line and each key's line (1-based)."""

    line: int = 0
    key_lines: dict[str, int]


class LineList(list[Any]):
    """A YAML sequence that remembers its line and each item's line (1-based)."""

    line: int = 0
    item_lines: list[int]


class _LineLoader(yaml.SafeLoader):
    pass


def _map(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key is None or isinstance(key, int | float | bool):
            key = str(key)  # JSON keys are strings: what a native round trip can keep
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "unhashable key", key_node.start_mark
            ) from None
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _seq(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(n, deep=True) for n in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [n.start_mark.line + 1 for n in node.value]
    return out


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """Dates stay the text written: JSON has no dates, and a date never equals a JSON value."""
    return str(loader.construct_scalar(node))


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)
_LineLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def yaml_with_lines(text: str, problems: Problems) -> Any:
    """Parse YAML keeping line numbers (LineDict/LineList); a syntax error becomes a problem."""
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problems.add(line, "", f"invalid YAML: {exc.problem or exc}")
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        # PyYAML raises ValueError for impossible dates such as 2020-13-45
        problems.add(None, "", f"invalid YAML: {exc}")
    return None


def line_of(node: Any, loc: tuple[int | str, ...] | list[int | str]) -> int | None:
    """The line of the deepest LineDict/LineList element reachable along `loc`."""
    best = getattr(node, "line", None) or None
    for part in loc:
        if isinstance(node, LineDict) and isinstance(part, str) and part in node:
            best = node.key_lines.get(str(part), best)
            node = node[part]
        elif isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node):
            best = node.item_lines[part]
            node = node[part]
        else:
            break
        inner = getattr(node, "line", None)
        if inner:
            best = inner if isinstance(node, LineDict) and part is not None else best
    return best
