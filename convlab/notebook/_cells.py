"""Table cells: every value escaped first, then wrapped in convlab's fixed markup (badges,
expandable long texts), numbers kept as numbers so that they sort (convlab.notebook.tables).
"""

from __future__ import annotations

import contextlib
import html
import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from convlab._readable import is_missing
from convlab.htmlkit import (
    BLAME_COLORS,
    CHANGE_COLORS,
    CLASS_CSS,
    GLYPHS,
    STABILITY_CSS,
    STATUS_CSS,
    VERDICT_COLORS,
)

__all__ = ["escape", "prepare"]

_PALETTES: dict[str, dict[str, str]] = {
    "status": STATUS_CSS,
    "classification": CLASS_CSS,
    "stability": STABILITY_CSS,
    "class_before": STABILITY_CSS,
    "class_after": STABILITY_CSS,
    "verdict": VERDICT_COLORS,
    "change": CHANGE_COLORS,
    "blame": BLAME_COLORS,
}
"""Columns whose words get a coloured badge (the same palette as cards and charts)."""

_CHECK_COLUMNS = frozenset({"passed", "reached"})
"""Boolean columns shown as a green ✓ / red ✗."""

_CHUNK = 5000
_CONTROL = str.maketrans({"\n": "&#10;", "\r": "", "\t": "&#9;"})


# ---------------------------------------------------------------- cells (escape, then markup)


def _text(value: Any) -> str:
    """Any cell value as plain text: missing -> "", lists joined, dicts as JSON."""
    if is_missing(value):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def escape(text: str) -> str:
    """html.escape, plus control characters as character references: itables formats string
    columns with pandas, which would print a raw newline as the two characters `\\n`."""
    return html.escape(text, quote=True).translate(_CONTROL)


def _long_text(value: Any, limit: int) -> str:
    """Escaped text; past `limit` characters a one-line summary with the full text behind
    a click. Both are in the cell's HTML, so the table's search finds words in either."""
    text = _text(value)
    if len(text) <= limit:
        return escape(text)
    line = " ".join(text.split())
    short = line[: limit - 1] + "…"
    return (
        f"<details class='cl-more'><summary title='{len(text):,} characters, click for all'>"
        f"{escape(short)}</summary><div>{escape(text)}</div></details>"
    )


def _badge(label: str, color: str | None, glyph: str = "") -> str:
    """A word in its colour on a faint tint of it (inline style: survives a sanitiser).

    Cell markup quotes its attributes with `'`: a cell travels as a JSON string inside a JSON
    string inside a notebook's JSON, where every `"` costs eight bytes."""
    text = escape(f"{glyph} {label}" if glyph else label)
    if color is None:
        return text
    tint = "color-mix(in srgb,currentColor 12%,transparent)"
    return f"<span class='cl-badge' style='color:{color};background:{tint}'>{text}</span>"


def _check(value: Any) -> str:
    if is_missing(value):
        return ""
    ok = bool(value)
    key = "passed" if ok else "failed"
    return _badge("yes" if ok else "no", STATUS_CSS[key], GLYPHS[key])


def _renderer(name: str, series: pd.Series[Any], limit: int) -> Callable[[Any], str]:
    """How the cells of one (non-numeric) column become escaped HTML."""
    palette = _PALETTES.get(name)
    if palette is not None:

        def colored(v: Any) -> str:
            label = _text(v)
            glyph = GLYPHS.get(label, "") if name == "status" else ""
            return _badge(label, palette.get(label), glyph) if label else ""

        return colored
    if pd.api.types.is_bool_dtype(series.dtype):
        if name in _CHECK_COLUMNS:
            return _check
        return lambda v: "" if is_missing(v) else ("yes" if v else "no")
    return lambda v: _long_text(v, limit)


def _rounded(values: pd.Series[Any]) -> pd.Series[Any]:
    """Floats for reading: 3 decimals, 3 significant digits below 0.01 ($0.000412 stays)."""
    small, out = values.notna() & (values != 0) & (values.abs() < 0.01), values.round(3)
    return out.mask(small, values[small].map(lambda v: float(f"{v:.3g}"))) if small.any() else out


def _numeric(series: pd.Series[Any]) -> pd.Series[Any] | None:
    """The column as numbers itables can sort (floats rounded for reading), or None when it
    holds text. Nullable integers with gaps become floats: itables would print `<NA>` raw."""
    if pd.api.types.is_bool_dtype(series.dtype):
        return None
    if pd.api.types.is_integer_dtype(series.dtype):
        return series.astype("float64") if series.isna().any() else series.astype("int64")
    if pd.api.types.is_float_dtype(series.dtype):
        return _rounded(series.astype("float64"))
    if series.dtype == object:
        values = series.dropna()
        if len(values) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        ):
            return _rounded(pd.to_numeric(series, errors="coerce").astype("float64"))
    return None


def prepare(df: pd.DataFrame, limit: int, max_bytes: int) -> tuple[pd.DataFrame, list[int]]:
    """A display copy of the leading rows of `df` that fit in `max_bytes` (0: all rows).

    Numbers stay numbers (numeric sort); every other cell becomes escaped HTML; headers are
    escaped. Text is rendered chunk by chunk so a huge frame stops at the cap instead of
    rendering rows it then drops. Returns the copy and the positions of its HTML columns.
    """
    if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
        with contextlib.suppress(ValueError):  # a meaningful index is shown as columns
            df = df.reset_index()
    numbers: dict[int, Any] = {}
    renders: dict[int, Callable[[Any], str]] = {}
    for i in range(df.shape[1]):
        number = _numeric(df.iloc[:, i])
        if number is not None:
            numbers[i] = number.to_numpy()
        else:
            renders[i] = _renderer(str(df.columns[i]), df.iloc[:, i], limit)
    fixed = 12 * (len(numbers) + 1)  # a number or a row's brackets: ~12 bytes of JSON
    cells: dict[int, list[str]] = {i: [] for i in renders}
    rows = used = 0
    while rows < len(df):
        chunk = df.iloc[rows : rows + _CHUNK]
        block = {i: [r(v) for v in chunk.iloc[:, i].tolist()] for i, r in renders.items()}
        sizes = [fixed + sum(len(col[j]) for col in block.values()) for j in range(len(chunk))]
        take = len(chunk)
        if max_bytes > 0:
            for j, size in enumerate(sizes):
                used += size
                if used > max_bytes:
                    take = j
                    break
        for i, col in block.items():
            cells[i] += col[:take]
        rows += take
        if take < len(chunk):
            break
    columns = {i: numbers[i][:rows] if i in numbers else cells[i] for i in range(df.shape[1])}
    out = pd.DataFrame(columns, index=pd.RangeIndex(rows))
    out.columns = pd.Index([escape(str(c)) for c in df.columns])
    return out, list(renders)
