"""The one formatter of what people read: numbers, percentages, durations, costs, tokens,
shortened text and control characters made visible.

Every view (the notebook card, tables and charts, the console, the Markdown and HTML
reports, `str()`/`repr()` of runs, experiments and answers) formats through these
functions, so a figure reads the same wherever it is shown.

The rules:

- A percentage has one decimal: 2 of 3 is `66.7%`, all is `100.0%`, none is `0.0%`. A rate
  that is not exactly 100 or 0 never rounds to either: 99.96 is `>99.9%` and 0.04 is `<0.1%`,
  so "everything passed" is only said when it did.
- A missing figure (None, NaN, NaT, pandas' NA) is `MISSING`, a dash.
- Text from an agent, a user's exception or a variant name is untrusted: `visible()` turns
  every C0/C1 control character (NUL, BEL, ESC and so the CSI/OSC sequences that clear,
  recolour or retitle a terminal, DEL, the one-byte C1 CSI/OSC) into visible `\\xNN` text.
  Tab and newline stay (they are layout); `shorten()` folds them away too.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "MISSING",
    "cost",
    "count",
    "cut",
    "cut_noted",
    "duration",
    "is_missing",
    "json_type",
    "millis",
    "number",
    "one_line",
    "pct",
    "shorten",
    "tokens",
    "visible",
]

MISSING = "-"
"""What a figure that is not known (None, NaN) reads as (ASCII: every terminal can show it)."""

_EXACT = 1e-9
"""How close to 0 or 100 a rate computed in floats (an interval's bound) is taken as exact."""
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def is_missing(value: Any) -> bool:
    """True for None, a float NaN, and pandas' NA and NaT (a frame's missing values)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str | bool | int | dict | list | tuple):
        return False
    try:
        return bool(value != value)  # NaN-like (numpy NaN, NaT); pd.NA raises
    except TypeError:
        return type(value).__name__ == "NAType"


def _float(value: Any) -> float | None:
    if is_missing(value) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def pct(value: Any) -> str:
    """A percentage (0-100) as text: `66.7%`, `100.0%`, `>99.9%`, `-` when missing.

    >>> pct(200 / 3), pct(100), pct(0), pct(99.96), pct(0.04), pct(None)
    ('66.7%', '100.0%', '0.0%', '>99.9%', '<0.1%', '-')
    """
    rate = _float(value)
    if rate is None:
        return MISSING
    if abs(rate) < _EXACT or abs(rate - 100) < _EXACT:
        rate = round(rate)  # float noise of a computed bound, not a rate between
    text = f"{rate:.1f}"
    if text == "100.0" and rate < 100:
        return ">99.9%"
    if text == "0.0" and rate > 0:
        return "<0.1%"
    return text + "%"


def number(value: Any, spec: str = ",.4g") -> str:
    """`value` formatted with `spec` (a format spec), or `MISSING` when it is not a number."""
    figure = _float(value)
    if figure is None:
        return MISSING
    return format(int(figure) if spec.endswith("d") else figure, spec)


def count(value: Any) -> str:
    """A whole number with thousands separators: `1,234`."""
    return number(value, ",d")


def tokens(value: Any) -> str:
    """A token count: `1,234` (the same rule as `count`, named for what it counts)."""
    return count(value)


def cost(usd: Any) -> str:
    """A cost in US dollars: `$1,234.50` from a dollar up and `$0.00` for nothing, else three
    significant digits (`$0.0123`, `$4.5e-05` for a fraction of a cent); `-` when unknown."""
    figure = _float(usd)
    if figure is None:
        return MISSING
    return f"${figure:,.2f}" if figure >= 1 or figure == 0 else f"${figure:.3g}"


def millis(ms: Any) -> str:
    """A latency given in milliseconds: `0.42 ms`, `120 ms`, `1.23 s`; `-` when unknown."""
    figure = _float(ms)
    if figure is None:
        return MISSING
    if figure < 1:
        return f"{figure:.2f} ms"
    return f"{figure:.0f} ms" if figure < 1000 else f"{figure / 1000:.2f} s"


def duration(seconds: Any) -> str:
    """A wall time given in seconds: `2.7s`, or `1.8m` past a minute (as `yao agent test`
    prints them); `-` when unknown."""
    figure = _float(seconds)
    if figure is None:
        return MISSING
    return f"{figure:.1f}s" if figure < 60 else f"{figure / 60:.1f}m"


def visible(text: object, *, keep_cr: bool = True, bidi: bool = False) -> str:
    """`text` with its control characters shown as `\\xNN`, so none reaches a terminal.

    Tab and newline stay; carriage return too unless `keep_cr` is off. With `bidi`, the
    bidirectional controls (an override, U+202E, makes text read other than it is stored:
    the "Trojan Source" trick) are shown as `\\uXXXX` as well.
    """
    out = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    if not keep_cr:
        out = out.replace("\r", "\\x0d")
    return _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", out) if bidi else out


def one_line(text: object) -> str:
    """`visible(text)` with runs of whitespace (newlines too) folded to one space."""
    return " ".join(visible(text, keep_cr=False).split())


def cut(text: str, limit: int, ellipsis: str = "…") -> str:
    """`text` as it is if it fits `limit` characters, else cut to end in `ellipsis` within
    them (newlines kept: see `shorten` for one line)."""
    return text if len(text) <= limit else text[: max(0, limit - len(ellipsis))] + ellipsis


def shorten(text: object, limit: int, ellipsis: str = "…") -> str:
    """`text` on one line (`one_line`), cut to `limit` characters ending in `ellipsis`.

    >>> shorten("a  long\\nline", 8)
    'a long …'
    """
    return cut(one_line(text), limit, ellipsis)


def cut_noted(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out (long agent replies);
    newlines kept, control characters shown (`visible`)."""
    if len(text) <= limit:
        return visible(text)
    return f"{visible(text[:limit])}… ({len(text) - limit} more characters)"


def json_type(value: Any) -> str:
    """The JSON name of a value's type for a message (`got array`): null, boolean, number,
    string, array or object; a value JSON cannot hold is named by its Python type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__
