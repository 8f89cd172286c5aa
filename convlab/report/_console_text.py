"""Safe, styled text for the console: escaping, glyph sets and colours.

Agent replies and case ids are untrusted: a reply holding `ESC[2J` or an OSC title sequence
must not clear or retitle the user's terminal, so every piece of such text goes through
`clean()` before any styling is added around it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TextIO

from convlab._readable import visible

__all__ = ["ASCII", "UNICODE", "Glyphs", "Style", "clean", "pick_glyphs"]


def clean(text: object) -> str:
    """`text` with every control character but tab and newline (the layout's) shown as
    `\\xNN`, so none reaches the terminal."""
    return visible(text, keep_cr=False)


@dataclass(frozen=True)
class Glyphs:
    """The marks the layout uses; ASCII for terminals that cannot show Unicode."""

    case: str
    tee: str
    bar: str
    elbow: str
    arrow: str
    ok: str
    bad: str
    info: str
    heavy: str
    light: str
    ellipsis: str
    cheer: str


UNICODE = Glyphs("►", "├─", "│ ", "└─", "→", "✓", "✗", "\u2139", "═", "─", "…", "✨")
ASCII = Glyphs(">", "+--", "|  ", "+--", "->", "+", "x", "i", "=", "-", "...", "**")


def pick_glyphs(stream: TextIO, glyphs: str | None) -> Glyphs:
    """`glyphs` ("unicode"/"ascii") if given, else Unicode when the stream can encode it."""
    if glyphs is not None:
        if glyphs not in ("unicode", "ascii"):
            raise ValueError(f"glyphs must be 'unicode' or 'ascii', got {glyphs!r}")
        return UNICODE if glyphs == "unicode" else ASCII
    encoding = getattr(stream, "encoding", None)
    if not encoding:  # StringIO and friends hold str: anything goes
        return UNICODE
    sample = "".join(str(v) for v in UNICODE.__dict__.values())
    try:
        sample.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return ASCII
    return UNICODE


def wants_color(stream: TextIO, color: bool | None) -> bool:
    """`color` if given; else colours only on a TTY and never with `NO_COLOR` set."""
    if color is not None:
        return color
    if "NO_COLOR" in os.environ:
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
STATUS_COLORS = {
    "passed": "green",
    "failed": "red",
    "error": "red",
    "timeout": "yellow",
    "skipped": "dim",
    "cancelled": "yellow",
    "blocked": "yellow",
}


@dataclass(frozen=True)
class Style:
    """Wraps already-cleaned text in SGR colour codes, or leaves it alone when colour is off."""

    color: bool

    def __call__(self, text: str, *names: str) -> str:
        codes = ";".join(_CODES[n] for n in names if n in _CODES)
        return f"\x1b[{codes}m{text}\x1b[0m" if self.color and codes and text else text

    def status(self, status: str) -> str:
        """`PASSED`, `FAILED`, ... coloured by outcome."""
        word = {"error": "ERROR", "timeout": "TIMEOUT"}.get(status, status.upper())
        return self(word, "bold", STATUS_COLORS.get(status, ""))
