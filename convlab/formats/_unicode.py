"""Text that is not Unicode (a lone UTF-16 surrogate) refused where a suite file's data enters.

A surrogate (U+D800..U+DFFF) is half of a UTF-16 pair, not a character: a string holding one
alone cannot be written as UTF-8, so a case holding one would load, then sink the run that
stores it. Files are decoded strictly, so such text reaches parsed data only through an
escape: JSON's `"\\udcff"`, YAML's double-quoted `"\\udcff"` or `"\\U0000dcff"`, or a Python
string escape that put the surrogate into a `!` docstring's YAML text itself.

Each format parses as before; then, only when its text holds such an escape (one C-speed
search of the text; for JSON, an escape that is not half of a pair: `lone_json_escape`),
`mend` walks the parsed data: a high + low pair written as two escapes (`"\\ud83d\\ude00"`,
how JSON writes an emoji) becomes its character, as JSON reads it; each lone half is a
problem at its field path (the format adds the file and line) and becomes U+FFFD, so the rest
of the loader reads valid text and reports every other problem too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "JSON_ESCAPE",
    "JSON_ESCAPE_BYTES",
    "SURROGATE",
    "YAML_ESCAPE",
    "Loc",
    "lone_json_escape",
    "mask",
    "mend",
]

Loc = tuple[int | str, ...]
_Key = tuple[list[int], bool]
"""A mended key's lone halves, and whether they were written in the text itself."""

SURROGATE = re.compile("[\ud800-\udfff]")
"""A surrogate in text: half of a UTF-16 pair, never a character on its own."""
JSON_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate (`\\ud83d`, `\\uDCFF`): how JSON text can hold one. An escaped
backslash before `u` (`\\\\udcff`) matches too; the walk it starts then finds nothing."""
JSON_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
"""`JSON_ESCAPE` over a file's UTF-8 bytes."""
_PAIR_OR_HALF_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(\\u[dD][89a-fA-F])"
)
"""A high + low escape pair (read first, as JSON does), else a lone half's escape (group 1),
in a text whose escaped backslashes are blanked."""
YAML_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")
"""A YAML double-quoted escape of a surrogate (`\\udcff`, `\\U0000dcff`)."""

_SHIFT = 0x100000
"""`mask` moves each surrogate to U+10D800..U+10DFFF (plane 16, private use): characters
every YAML parser takes, and mapped back by `mend`."""
_MASKED = re.compile("[\U0010d800-\U0010dfff]")
_BAD = re.compile("[\ud800-\udfff]")
_BAD_OR_MASKED = re.compile("[\ud800-\udfff\U0010d800-\U0010dfff]")
_PAIR_OR_HALF = re.compile("([\ud800-\udbff][\udc00-\udfff])|[\ud800-\udfff]")


def lone_json_escape(text: str) -> bool:
    """Whether JSON text may decode to a lone surrogate: it holds a surrogate escape that is
    not half of a `\\ud83d\\ude00` pair (which JSON reads as one character). Escaped
    backslashes (`\\\\`) are blanked first, so `\\\\udcff` (a backslash, then text) is
    not taken for an escape."""
    if JSON_ESCAPE.search(text) is None:
        return False
    return any(m[1] for m in _PAIR_OR_HALF_ESCAPE.finditer(text.replace("\\\\", "__")))


def mask(text: str) -> str | None:
    """`text` with each surrogate written in it moved to a private-use character a parser
    accepts (for `mend(..., masked=True)` to map back), or None when the text already holds
    such characters (they would be taken for surrogates)."""
    if _MASKED.search(text):
        return None
    return SURROGATE.sub(lambda m: chr(ord(m[0]) + _SHIFT), text)


def _cause(kind: str | None) -> str:
    what = "half a UTF-16 pair written in the text itself, e.g. by a Python escape"
    if kind:
        what = f"a {kind} escape of half a UTF-16 pair"
    return f"{what}: write the character, or both halves of its pair"


def _message(halves: list[int], kind: str | None, key: bool) -> str:
    first = f"\\u{halves[0]:04x}"
    many = f"{len(halves)} lone surrogates (first {first})"
    what = f"a lone surrogate {first}" if len(halves) == 1 else many
    return f"not Unicode text: {what}{' in this key' if key else ''} ({_cause(kind)})"


def _mend_text(text: str, masked: bool) -> tuple[str, list[int], bool]:
    """(the text with pairs joined and lone halves replaced by U+FFFD, the lone halves,
    whether they were written in the text itself rather than escaped)."""
    raw = False
    if masked and _MASKED.search(text):
        text = _MASKED.sub(lambda m: chr(ord(m[0]) - _SHIFT), text)
        raw = True
    halves: list[int] = []

    def one(m: re.Match[str]) -> str:
        if m[1]:
            high, low = ord(m[1][0]), ord(m[1][1])
            return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        halves.append(ord(m[0]))
        return "\ufffd"

    return _PAIR_OR_HALF.sub(one, text), halves, raw


def _mended(
    text: str, loc: Loc, report: Callable[[Loc, str], None], kind: str, masked: bool
) -> str:
    """One string mended (`_mend_text`), its lone halves reported at `loc`."""
    out, halves, raw = _mend_text(text, masked)
    if halves:
        report(loc, _message(halves, None if raw else kind, key=False))
    return out


def mend(
    value: Any,
    report: Callable[[Loc, str], None],
    kind: str,
    *,
    masked: bool = False,
) -> Any:
    """`value` (parsed JSON or YAML data) with all its text Unicode; each lone surrogate
    reported.

    Every string, mapping keys included, is read: a high + low surrogate pair becomes its
    character; a string holding a lone half gets `report(location, message)` once (the
    location of a key ends with the key as mended) and each half becomes U+FFFD. `kind`
    ("JSON", "YAML") names the escape in the message; with `masked`, characters `mask` moved
    are surrogates written in the text itself. Mappings and lists are changed in place (a
    shared one once, so a YAML alias costs nothing more), keeping a mapping's key order and
    its `key_lines`; the value is returned (a string at the top is a new one).
    """
    bad = _BAD_OR_MASKED if masked else _BAD
    if isinstance(value, str):
        return _mended(value, (), report, kind, masked) if bad.search(value) else value
    seen: set[int] = set()
    stack: list[tuple[Any, Any, Any, Loc]] = [(None, None, value, ())]
    while stack:
        parent, at, node, loc = stack.pop()
        if isinstance(node, _Said):
            report(loc, node.message)
            continue
        if isinstance(node, str):
            if bad.search(node):
                parent[at] = _mended(node, loc, report, kind, masked)
            continue
        if not isinstance(node, dict | list | tuple | set | frozenset) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            keys = _mend_keys(node, masked, bad)
            items = list(node.items())
            if keys:  # each key's problem just before its value's (document order)
                for key, child in reversed(items):
                    stack.append((node, key, child, (*loc, key)))
                    if key in keys:
                        halves, raw = keys[key]
                        said = _Said(_message(halves, None if raw else kind, key=True))
                        stack.append((None, None, said, (*loc, key)))
                continue
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:  # a YAML !!set or an !!omap pair: rebuilt whole (no alias inside to keep)
            rebuilt = type(node)(mend(list(node), _under(loc, report), kind, masked=masked))
            if parent is None:
                value = rebuilt
            else:
                parent[at] = rebuilt
            continue
        stack.extend((node, k, v, (*loc, k)) for k, v in reversed(items))
    return value


def _under(loc: Loc, report: Callable[[Loc, str], None]) -> Callable[[Loc, str], None]:
    """`report` for a value at `loc`: its locations are prefixed with `loc`."""

    def inner(sub: Loc, message: str) -> None:
        report((*loc, *sub), message)

    return inner


class _Said:
    """A problem of a key, reported when the walk reaches the key's value."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _mend_keys(node: dict[Any, Any], masked: bool, bad: re.Pattern[str]) -> dict[str, _Key]:
    """Mend a mapping's keys in place, keeping their order (and a YAML mapping's key lines);
    returns, for each mended key that held a lone half, those halves and how they were
    written."""
    renamed: dict[Any, str] = {}
    found: dict[str, _Key] = {}
    for key in node:
        if isinstance(key, str) and bad.search(key):
            text, halves, raw = _mend_text(key, masked)
            renamed[key] = text
            if halves:
                found[text] = (halves, raw)
    if renamed:
        items = list(node.items())
        node.clear()
        node.update((renamed.get(k, k), v) for k, v in items)
        lines = getattr(node, "key_lines", None)
        if isinstance(lines, dict):
            node.key_lines = {renamed.get(k, k): n for k, n in lines.items()}  # type: ignore[attr-defined]
    return found
