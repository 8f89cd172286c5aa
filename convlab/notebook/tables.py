"""Interactive tables: sortable, searchable DataTables (itables) that work with no network.

`run.table(kind)`, `suite.table()` and `compare(a, b).table()` return a `Table`: `.df` is the
untouched pandas frame (the source of truth), its HTML an itables DataTable in offline mode.

How the DataTables bundle travels: once per page (convlab.notebook._bundle). In a kernel the
first table of the session carries it and later tables wait for it, wherever it sits on the
page; outside a kernel (`to_html()`) a table carries it unless `bundle=False`.

Without JavaScript (an untrusted notebook, GitHub's viewer) itables' static preview of the
first rows shows instead. If the bundle fails to load, the loader reveals that preview too.

Size cap: itables' default `maxBytes` (64 KB, estimated from numpy buffers, blind to string
lengths) would silently downsample. It is turned off (`maxBytes=0`, `maxRows=0`,
`maxColumns=0`); instead the rows' HTML is measured and cut at `max_bytes` (default 8 MB),
keeping the first rows in frame order, with a visible note above the table and in the plain
text ("showing the first N of M rows ... the full data is in .df").

Safety: case ids, agent replies, inputs and error messages are untrusted. itables runs with
`allow_html=True` only because every cell and header is escaped here first (html.escape), then
wrapped in fixed markup: coloured status badges, `<details>` for long texts (shortened to
`text_limit` characters in the cell, the full text one click away and still searchable).
"""

from __future__ import annotations

import contextlib
import html
import json
import math
import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from convlab.formats._base import did_you_mean
from convlab.notebook._bundle import (
    bundle_html,
    carries_bundle,
    dedupe_bundles,
    missing_bundle_html,
    own_namespace,
)
from convlab.notebook._style import (
    BLAME_COLORS,
    CHANGE_COLORS,
    CLASS_COLORS,
    GLYPHS,
    STABILITY_COLORS,
    STATUS_COLORS,
    TABLE_CSS,
    VERDICT_COLORS,
)

if TYPE_CHECKING:
    from convlab.analysis.compare import Comparison
    from convlab.model.run import Run
    from convlab.model.suite import Suite

__all__ = [
    "COUNTED",
    "KINDS",
    "MAX_BYTES",
    "STABILITY_VIEW",
    "TEXT_LIMIT",
    "Table",
    "bundle_html",
    "compare_table",
    "dedupe_bundles",
    "frame_html",
    "run_table",
    "stability_columns",
    "stability_table",
    "suite_table",
]

TEXT_LIMIT = 120
"""Characters of a long text shown in its cell; the rest is behind a click (`<details>`)."""

MAX_BYTES = 8 * 2**20
"""Row data (HTML) kept in one table's output; larger frames keep their first rows, with a
note. Past this size a notebook output gets sluggish."""

STABILITY_VIEW = (
    "case_id",
    "variant",
    "runs",
    "passed",
    "failed",
    "errors",
    "timeouts",
    "pass_rate",
    "stability",
    "k",
    "pass_hat_k",
    "ci_low",
    "ci_high",
    "duration_mean_ms",
    "not_agent",
    "not_agent_blame",
)
"""The columns `run.stability()` and `run.table("stability")` show, those of them that are
not empty; the frame (`.df`) keeps every column."""

COUNTED = ("repetition", "run", "turn", "index")
"""Run frames' 0-based columns (run, repetition, turn, a tool call's index in its turn) that a
table shows from 1, as the tree, the cards and the console count; `.df` keeps them 0-based."""

KINDS: dict[str, Callable[[Run], pd.DataFrame]] = {
    "instances": lambda run: run.df,
    "cases": lambda run: _cases_frame(run),
    "stability": lambda run: run.stability(),
    "turns": lambda run: run.turns_df,
    "assertions": lambda run: run.assertions_df,
    "checkpoints": lambda run: run.checkpoints_df,
    "tool_calls": lambda run: run.tool_calls_df,
}
"""`run.table(kind)` kinds -> the frame each one shows."""

_PALETTES: dict[str, dict[str, str]] = {
    "status": STATUS_COLORS,
    "classification": CLASS_COLORS,
    "stability": STABILITY_COLORS,
    "class_before": STABILITY_COLORS,
    "class_after": STABILITY_COLORS,
    "verdict": VERDICT_COLORS,
    "change": CHANGE_COLORS,
    "blame": BLAME_COLORS,
}
"""Columns whose words get a coloured badge (the same palette as cards and charts)."""

_CHECK_COLUMNS = frozenset({"passed", "reached"})
"""Boolean columns shown as a green ✓ / red ✗."""

_CHUNK = 5000
_PREVIEW_CELL = re.compile(
    r'(<t[hdr])\s+style="(?:border:1px solid #ddd;padding:8px|text-align: right;)"'
)
_PREVIEW_CSS = """
.convlab.cl-table>div[id$=_fallback] :is(th,td){border:1px solid rgba(128,128,128,.35);
 padding:4px 8px;text-align:left}"""
"""The static preview's cell borders, once per table instead of inline on every cell."""
_CONTROL = str.maketrans({"\n": "&#10;", "\r": "", "\t": "&#9;"})


# ---------------------------------------------------------------- cells (escape, then markup)


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _text(value: Any) -> str:
    """Any cell value as plain text: missing -> "", lists joined, dicts as JSON."""
    if _missing(value):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _escape(text: str) -> str:
    """html.escape, plus control characters as character references: itables formats string
    columns with pandas, which would print a raw newline as the two characters `\\n`."""
    return html.escape(text, quote=True).translate(_CONTROL)


def _long_text(value: Any, limit: int) -> str:
    """Escaped text; past `limit` characters a one-line summary with the full text behind
    a click. Both are in the cell's HTML, so the table's search finds words in either."""
    text = _text(value)
    if len(text) <= limit:
        return _escape(text)
    line = " ".join(text.split())
    short = line[: limit - 1] + "…"
    return (
        f"<details class='cl-more'><summary title='{len(text):,} characters, click for all'>"
        f"{_escape(short)}</summary><div>{_escape(text)}</div></details>"
    )


def _badge(label: str, color: str | None, glyph: str = "") -> str:
    """A word in its colour on a light tint of it (inline style: survives a sanitiser).

    Cell markup quotes its attributes with `'`: a cell travels as a JSON string inside a JSON
    string inside a notebook's JSON, where every `"` costs eight bytes."""
    text = _escape(f"{glyph} {label}" if glyph else label)
    if color is None:
        return text
    return f"<span class='cl-badge' style='color:{color};background:{color}1a'>{text}</span>"


def _check(value: Any) -> str:
    if _missing(value):
        return ""
    ok = bool(value)
    key = "passed" if ok else "failed"
    return _badge("yes" if ok else "no", STATUS_COLORS[key], GLYPHS[key])


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
        return lambda v: "" if _missing(v) else ("yes" if v else "no")
    return lambda v: _long_text(v, limit)


def _numeric(series: pd.Series[Any]) -> pd.Series[Any] | None:
    """The column as numbers itables can sort (floats rounded for reading), or None when it
    holds text. Nullable integers with gaps become floats: itables would print `<NA>` raw."""
    if pd.api.types.is_bool_dtype(series.dtype):
        return None
    if pd.api.types.is_integer_dtype(series.dtype):
        return series.astype("float64") if series.isna().any() else series.astype("int64")
    if pd.api.types.is_float_dtype(series.dtype):
        return series.astype("float64").round(3)
    if series.dtype == object:
        values = series.dropna()
        if len(values) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        ):
            return pd.to_numeric(series, errors="coerce").astype("float64").round(3)
    return None


def _prepare(df: pd.DataFrame, limit: int, max_bytes: int) -> tuple[pd.DataFrame, list[int]]:
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
    out.columns = pd.Index([_escape(str(c)) for c in df.columns])
    return out, list(renders)


# ---------------------------------------------------------------- frames -> HTML


def _light_preview(table: str) -> str:
    """itables' table HTML with its static preview's per-cell inline styles dropped (one rule
    in `_PREVIEW_CSS` draws them): a tenth of a small table's bytes."""
    start = table.find("_fallback")
    end = table.find("</div><script>", start)
    if start < 0 or end < 0:
        return table
    return table[:start] + _PREVIEW_CELL.sub(r"\1", table[start:end]) + table[end:]


def frame_html(
    df: pd.DataFrame,
    caption: str | None = None,
    *,
    description: str | None = None,
    text_limit: int = TEXT_LIMIT,
    max_bytes: int = MAX_BYTES,
    bundle: bool = True,
    page_length: int = 10,
) -> str:
    """Offline interactive HTML for any frame, safe to embed in a notebook output, a card or a
    report: self-contained, or with `bundle=False` waiting for the page's one bundle loader
    (and saying so over its static preview when the page has none)."""
    from itables import to_html_datatable

    prepared, html_columns = _prepare(df, text_limit, max_bytes)
    note = ""
    if len(prepared) < len(df):
        note = (
            f"Showing the first {len(prepared):,} of {len(df):,} rows: the rest would pass the "
            f"{max_bytes / 2**20:.3g} MB page limit. The full data is in <code>.df</code>."
        )
    small = len(prepared) <= page_length
    options: dict[str, Any] = {
        "allow_html": True,  # every cell and header is escaped by _prepare
        "connected": False,
        "maxBytes": 0,
        "maxRows": 0,
        "maxColumns": 0,
        "showIndex": False,
        "display_logo_when_loading": False,
        "text_in_header_can_be_selected": False,  # a click on the header text sorts
        "classes": "display nowrap compact cell-border",
        "style": "table-layout:auto;width:auto;margin:0",
        "pageLength": page_length,
        "lengthMenu": sorted({page_length, 10, 25, 50, 100}),
        "layout": {
            "topStart": None if small else "pageLength",
            "topEnd": "search",
            "bottomStart": "info",
            "bottomEnd": None if small else "paging",
        },
        "table_id": "cl_" + uuid.uuid4().hex,
    }
    if html_columns:
        options["columnDefs"] = [{"targets": html_columns, "type": "html"}]
    table = own_namespace(_light_preview(to_html_datatable(prepared, **options)))
    parts = ['<div class="convlab cl-table">', f"<style>{TABLE_CSS}{_PREVIEW_CSS}</style>"]
    if caption:
        parts.append(f'<div class="cl-caption">{_escape(caption)}</div>')
    if description:
        parts.append(f'<div class="cl-desc">{_escape(description)}</div>')
    if note:
        parts.append(f'<div class="cl-note">{note}</div>')
    parts.append(bundle_html() if bundle else missing_bundle_html(options["table_id"]))
    parts += [table, "</div>"]
    return "\n".join(parts)


class Table:
    """A frame shown as an interactive table; `.df` is the data itself, left untouched.

    In a notebook it renders as a sortable, searchable DataTable that needs no network; as
    text it is a one-line header and the first rows.
    """

    def __init__(
        self,
        df: pd.DataFrame,
        caption: str | None = None,
        *,
        description: str | None = None,
        text_limit: int = TEXT_LIMIT,
        max_bytes: int = MAX_BYTES,
        columns: list[str] | None = None,
        counted: tuple[str, ...] = (),
    ) -> None:
        self.df = df
        self.caption = caption
        self.description = description
        self.text_limit = text_limit
        self.max_bytes = max_bytes
        self.columns = columns
        """The columns shown (None: all); `.df` keeps every column either way."""
        self.counted = counted
        """0-based index columns shown counting from 1, as people count (`.df` keeps 0)."""

    @property
    def shown(self) -> pd.DataFrame:
        """The frame as shown: `.df`, or its `columns`, with `counted` columns from 1."""
        df = self.df if self.columns is None else pd.DataFrame(self.df[self.columns])
        ones = {c: df[c] + 1 for c in self.counted if c in df.columns}
        return pd.DataFrame(df.assign(**ones)) if ones else df

    def to_html(self, *, bundle: bool = True) -> str:
        """The offline interactive HTML (with the DataTables bundle unless `bundle=False`)."""
        return frame_html(
            self.shown,
            self.caption,
            description=self.description,
            text_limit=self.text_limit,
            max_bytes=self.max_bytes,
            bundle=bundle,
        )

    def _header(self) -> str:
        rows, cols = self.shown.shape
        what = self.caption or "Table"
        return f"{what}: {rows:,} row{'' if rows == 1 else 's'} x {cols} columns"

    def _text(self) -> str:
        if self.df.empty:
            return self._header()
        preview = pd.DataFrame(self.shown).to_string(
            index=False, max_rows=10, max_cols=8, max_colwidth=40
        )
        lines = [f"{self._header()} (the data: .df)", preview]
        if self.description:
            lines.insert(1, self.description)
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self._text(), "text/html": self._repr_html_()}

    def _repr_html_(self) -> str:
        """The notebook output: the bundle only where this output is its carrier (in a
        kernel session, the first table shown; convlab.notebook._bundle)."""
        return self.to_html(bundle=carries_bundle())

    def __repr__(self) -> str:
        return f"<{self._header()}>"

    def __len__(self) -> int:
        return len(self.df)


# ---------------------------------------------------------------- model hooks


def _cases_frame(run: Run) -> pd.DataFrame:
    """One row per case: counts, pass rate, stability, the first reason it failed."""
    stab = run.stability()
    cols = ["case_id", "runs", "passed", "failed", "errors", "pass_rate", "stability"]
    cols += [c for c in ("not_agent", "not_agent_blame") if c in stab.columns]
    out = stab[[c for c in cols if c in stab.columns]].copy()
    df = run.df
    reasons: dict[Any, str] = {}
    if not df.empty and "error" in df.columns:
        failed = df[df["error"].fillna("") != ""].drop_duplicates("case_id")
        reasons = dict(zip(failed["case_id"], failed["error"], strict=True))
    out["first_failure"] = [reasons.get(c, "") for c in out["case_id"]]
    return out.reset_index(drop=True)


def run_table(run: Run, kind: str = "instances") -> Table:
    """`run.table(kind)`: one of the run's frames as an interactive table."""
    frame = KINDS.get(kind)
    if frame is None:
        raise ValueError(
            f"unknown table kind {kind!r}; valid kinds: {', '.join(KINDS)}."
            + did_you_mean(kind, KINDS)
        )
    label = f"Run {run.id}" if run.id else "Run"
    if kind == "stability":
        return stability_table(run.stability(), f"{label} · stability")
    df = frame(run)
    counted = tuple(c for c in COUNTED if c in df.columns)
    note = (
        f"{', '.join(counted)} count from 1 here; from 0 in the DataFrame (.df)."
        if counted
        else None
    )
    return Table(df, f"{label} · {kind}", description=note, counted=counted)


def stability_columns(df: pd.DataFrame) -> list[str]:
    """The `STABILITY_VIEW` columns of a stability frame worth showing: those it has, less
    the ones with nothing in them (no timeout, no variant, nothing blamed elsewhere)."""
    quiet = ("variant", "timeouts", "not_agent", "not_agent_blame")
    cols = [c for c in STABILITY_VIEW if c in df.columns]
    cols = [c for c in cols if c not in quiet or bool(df[c].fillna(0).astype(bool).any())]
    return cols if "case_id" in cols else list(df.columns)


def stability_table(df: pd.DataFrame, caption: str = "Stability") -> Table:
    """`run.stability()` as an interactive table of its main columns (`.df`: every column)."""
    cols = stability_columns(df)
    interval = str(df.attrs.get("interval", "wilson")).capitalize()
    note = (
        f"Per case: runs, passes, pass rate, stability, pass^k and the 95% {interval} interval "
        f"(percent). {len(cols)} of {df.shape[1]} columns; all of them are in the DataFrame."
    )
    return Table(df, caption, description=note, columns=cols)


def suite_table(suite: Suite) -> Table:
    """`suite.table()`: the suite's cases (id, name, mode, turns, assertions, tags, source)."""
    return Table(suite.df, f"Suite {suite.name or suite.id} · cases")


def compare_table(comparison: Comparison) -> Table:
    """`compare(a, b).table()`: the per-case change, worse / better in colour."""
    summary = str(comparison.attrs.get("summary", "")) or None
    return Table(comparison, "Comparison · per-case change", description=summary)
