"""Line numbers for JSON locations, computed from the text only when they are needed.

`json.loads` keeps no positions. Instead of a slow position-tracking parse on every load,
`locate` walks the text once, descending only into the locations asked for and skipping
every other value with the C decoder (`raw_decode`), so a problem in a large file costs
about one extra parse. The token scans below explain what `json.loads` could not say
(where a NaN, an overflowing number or a too-deep nesting is).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

__all__ = ["ANY", "Loc", "deep_nesting_line", "deepest_line", "locate", "non_json_tokens"]

Loc = tuple[int | str, ...]
ANY: Any = object()
"""A wildcard location segment: every member or item at that level."""

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_STRING_OR = r'"(?:[^"\\]|\\.)*"'
_CONSTANT = re.compile(_STRING_OR + r"|(-?Infinity|NaN)")
_NUMBER = re.compile(_STRING_OR + r"|(-?\d+(?:\.\d+)?[eE][+-]?\d+|-?\d+\.\d+|\d{4301,})")
_BRACKET = re.compile(_STRING_OR + r"|([\[\]{}])")

_Trie = dict[Any, "_Trie"]


class _Lines:
    """Line of a text offset; offsets must be asked in increasing order (cheap counting)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def at(self, pos: int) -> int:
        if pos < self.pos:  # a rare step back (duplicate keys): count from the start
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _trie(locs: Iterable[Loc]) -> _Trie:
    root: _Trie = {}
    for loc in locs:
        node = root
        for part in loc:
            node = node.setdefault(part, {})
    return root


def locate(text: str, locs: Iterable[Loc]) -> dict[Loc, int]:
    """Map each location on the way to `locs` to its line (a member's key line).

    The text must be valid JSON (`json.loads` accepted it). Locations that do not exist
    are simply absent from the result; use `deepest_line` to fall back to an ancestor.
    """
    out: dict[Loc, int] = {}
    lines = _Lines(text)
    start = _WS.match(text, 0)
    pos = start.end() if start else 0
    out[()] = lines.at(pos)
    with contextlib.suppress(ValueError, IndexError):  # invalid JSON: keep what was found
        _walk(text, pos, _trie(locs), (), out, lines)
    return out


def _skip(text: str, pos: int) -> int:
    m = _WS.match(text, pos)
    return m.end() if m else pos


def _walk(text: str, pos: int, trie: _Trie, loc: Loc, out: dict[Loc, int], lines: _Lines) -> int:
    """Record lines under `loc` for the wanted children; return the end of this value."""
    if not trie:
        return int(_DECODER.raw_decode(text, pos)[1])
    opener = text[pos]
    if opener == "{":
        return _walk_object(text, pos + 1, trie, loc, out, lines)
    if opener == "[":
        return _walk_array(text, pos + 1, trie, loc, out, lines)
    return int(_DECODER.raw_decode(text, pos)[1])


def _walk_object(
    text: str, pos: int, trie: _Trie, loc: Loc, out: dict[Loc, int], lines: _Lines
) -> int:
    pos = _skip(text, pos)
    if text[pos] == "}":
        return pos + 1
    while True:
        key_pos = pos
        key, pos = scanstring(text, pos + 1)
        pos = _skip(text, pos)
        pos = _skip(text, pos + 1)  # the ':'
        sub = trie.get(key, trie.get(ANY))
        if sub is None:
            pos = int(_DECODER.raw_decode(text, pos)[1])
        else:
            out[(*loc, key)] = lines.at(key_pos)
            pos = _walk(text, pos, sub, (*loc, key), out, lines)
        pos = _skip(text, pos)
        if text[pos] == "}":
            return pos + 1
        pos = _skip(text, pos + 1)  # the ','


def _walk_array(
    text: str, pos: int, trie: _Trie, loc: Loc, out: dict[Loc, int], lines: _Lines
) -> int:
    pos = _skip(text, pos)
    if text[pos] == "]":
        return pos + 1
    index = 0
    while True:
        sub = trie.get(index, trie.get(ANY))
        if sub is None:
            pos = int(_DECODER.raw_decode(text, pos)[1])
        else:
            out[(*loc, index)] = lines.at(pos)
            pos = _walk(text, pos, sub, (*loc, index), out, lines)
        pos = _skip(text, pos)
        if text[pos] == "]":
            return pos + 1
        pos = _skip(text, pos + 1)
        index += 1


def deepest_line(found: dict[Loc, int], loc: Loc) -> int | None:
    """The line of `loc`, or of its deepest ancestor that exists in the text."""
    for end in range(len(loc), -1, -1):
        line = found.get(loc[:end])
        if line is not None:
            return line
    return None


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def non_json_tokens(text: str) -> list[tuple[int | None, str]]:
    """(line, token) of NaN/Infinity constants and numbers Python cannot hold as JSON."""
    found: list[tuple[int | None, str]] = []
    for m in _CONSTANT.finditer(text):
        if m.group(1):
            found.append((_line_of(text, m.start(1)), m.group(1)))
    for m in _NUMBER.finditer(text):
        token = m.group(1)
        if token and (len(token) > 4300 or math.isinf(float(token))):
            found.append((_line_of(text, m.start(1)), token[:40]))
    return sorted(found)


def deep_nesting_line(text: str, limit: int) -> int | None:
    """The line where bracket nesting first goes deeper than `limit` levels."""
    depth = 0
    for m in _BRACKET.finditer(text):
        bracket = m.group(1)
        if not bracket:
            continue
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return _line_of(text, m.start(1))
    return None
