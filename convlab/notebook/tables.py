"""Interactive tables: sortable, searchable DataTables (itables) that work with no network.

`run.table(kind)`, `suite.table()` and `compare(a, b).table()` return a `Table`: `.df` is the
untouched pandas frame (the source of truth), its HTML an itables DataTable in offline mode.

How the DataTables bundle travels (the decision, and why)
---------------------------------------------------------
itables' own offline mode (`init_notebook_mode(connected=False)`) puts the bundle in one
cell's output and every later table depends on it: clear or re-run that cell, open one
output in Colab's per-output iframe, or export a notebook whose init cell was dropped, and
every table says "Loading ITables..." forever. A library cannot ask users to keep a magic
cell, so here **every table output is self-contained**: it carries the bundle (dt_bundle.js
and .css from the itables wheel), gzip-compressed and base64-encoded, in a loader script that
runs once per page (guarded by itables' own `window._itables_<version>` promise, so later
tables, and tables made by plain itables of the same version, reuse the first one loaded).
The browser inflates it with `DecompressionStream` (Chromium 80+, Firefox 113+, Safari 16.4+).

Compressed, the bundle is a fraction of what itables embeds (base64 without gzip), and for a
small table it is most of the output. The trade-off is the bundle in every table instead of
once per notebook, for outputs that work
anywhere on their own: live JupyterLab (any cell re-run in any order), nbclient + nbconvert
HTML opened from file:// with the network blocked, a standalone report, Colab. A page holding
many tables can ship the bundle once: `frame_html(df, bundle=False)` for each table plus one
`bundle_html()` anywhere in the page, or `dedupe_bundles(page)` on a finished page.

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

import base64
import contextlib
import gzip
import html
import json
import math
import re
import uuid
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import pandas as pd

from convlab.formats._base import did_you_mean
from convlab.notebook._style import (
    BLAME_COLORS,
    CHANGE_COLORS,
    CLASS_COLORS,
    GLYPHS,
    STATUS_COLORS,
    TABLE_CSS,
    VERDICT_COLORS,
)

if TYPE_CHECKING:
    from convlab.analysis.compare import Comparison
    from convlab.model.run import Run
    from convlab.model.suite import Suite

__all__ = [
    "KINDS",
    "MAX_BYTES",
    "TEXT_LIMIT",
    "Table",
    "bundle_html",
    "compare_table",
    "dedupe_bundles",
    "frame_html",
    "run_table",
    "suite_table",
]

TEXT_LIMIT = 120
"""Characters of a long text shown in its cell; the rest is behind a click (`<details>`)."""

MAX_BYTES = 8 * 2**20
"""Row data (HTML) kept in one table's output; larger frames keep their first rows, with a
note. Past this size a notebook output gets sluggish."""

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
    "class_before": CLASS_COLORS,
    "class_after": CLASS_COLORS,
    "verdict": VERDICT_COLORS,
    "change": CHANGE_COLORS,
    "blame": BLAME_COLORS,
}
"""Columns whose words get a coloured badge (the same palette as cards and charts)."""

_CHECK_COLUMNS = frozenset({"passed", "reached"})
"""Boolean columns shown as a green ✓ / red ✗."""

_BUNDLE_RE = re.compile(r"<script data-convlab-bundle=[^>]*>.*?</script>", re.DOTALL)
_CHUNK = 5000
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
        f'<details class="cl-more"><summary title="{len(text):,} characters, click for all">'
        f"{_escape(short)}</summary><div>{_escape(text)}</div></details>"
    )


def _badge(label: str, color: str | None, glyph: str = "") -> str:
    """A word in its colour on a light tint of it (inline style: survives a sanitiser)."""
    text = _escape(f"{glyph} {label}" if glyph else label)
    if color is None:
        return text
    return f'<span class="cl-badge" style="color:{color};background:{color}1a">{text}</span>'


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


# ---------------------------------------------------------------- the DataTables bundle


@cache
def _bundle_payload() -> tuple[str, str, str, str]:
    """(namespace, ready event, gzipped js as base64, gzipped css as base64), once a process."""
    from itables.javascript import _itables_ready_event, _itables_underscore_version
    from itables.utils import find_package_file

    def packed(name: str) -> str:
        raw = find_package_file("html", name).read_bytes()
        return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode("ascii")

    return (
        _itables_underscore_version(),
        _itables_ready_event(),
        packed("dt_bundle.js"),
        packed("dt_bundle.css"),
    )


_LOADER = """<script data-convlab-bundle="{ns}">(function () {{
  var ns = "{ns}", ready = "{event}";
  if (window[ns]) return;
  function inflate(b64) {{
    var s = atob(b64), a = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
    var z = new Blob([a]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(z).text();
  }}
  window[ns] = (async function () {{
    var css = document.createElement("style");
    css.textContent = await inflate("{css}");
    document.head.appendChild(css);
    var url = URL.createObjectURL(
      new Blob([await inflate("{js}")], {{type: "text/javascript"}}));
    try {{ var m = await import(url); }} finally {{ URL.revokeObjectURL(url); }}
    if (m.set_or_remove_dark_class) m.set_or_remove_dark_class();
    return m;
  }})();
  window[ns].then(function () {{ window.dispatchEvent(new Event(ready)); }}, function (e) {{
    console.error("convlab: the offline table bundle did not load", e);
    var show = document.createElement("style");  /* the static previews, now and later */
    show.textContent = ".convlab.cl-table>div[id$=_fallback]{{display:block!important}}" +
      ".convlab.cl-table>table[id^=cl_]{{display:none!important}}";
    document.head.appendChild(show);
  }});
}})();</script>"""


def bundle_html() -> str:
    """The DataTables JS + CSS loader (compressed): for a page that holds several tables made
    with `frame_html(..., bundle=False)`. It runs once per page, wherever it is placed."""
    ns, event, js, css = _bundle_payload()
    return _LOADER.format(ns=ns, event=event, js=js, css=css)


def dedupe_bundles(page: str) -> str:
    """Keep the first bundle loader in a page (an exported notebook, a report) and drop the
    rest: the page shrinks by one bundle per extra table and renders the same."""
    seen = False

    def keep_first(m: re.Match[str]) -> str:
        nonlocal seen
        if seen:
            return ""
        seen = True
        return m.group(0)

    return _BUNDLE_RE.sub(keep_first, page)


# ---------------------------------------------------------------- frames -> HTML


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
    """Offline interactive HTML for any frame: a self-contained fragment (see the module
    docstring) safe to embed in a notebook output, a card or a report."""
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
    table = to_html_datatable(prepared, **options)
    parts = ['<div class="convlab cl-table">', f"<style>{TABLE_CSS}</style>"]
    if caption:
        parts.append(f'<div class="cl-caption">{_escape(caption)}</div>')
    if description:
        parts.append(f'<div class="cl-desc">{_escape(description)}</div>')
    if note:
        parts.append(f'<div class="cl-note">{note}</div>')
    if bundle:
        parts.append(bundle_html())
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
    ) -> None:
        self.df = df
        self.caption = caption
        self.description = description
        self.text_limit = text_limit
        self.max_bytes = max_bytes

    def to_html(self, *, bundle: bool = True) -> str:
        """The offline interactive HTML (with the DataTables bundle unless `bundle=False`)."""
        return frame_html(
            self.df,
            self.caption,
            description=self.description,
            text_limit=self.text_limit,
            max_bytes=self.max_bytes,
            bundle=bundle,
        )

    def _header(self) -> str:
        rows, cols = self.df.shape
        what = self.caption or "Table"
        return f"{what}: {rows:,} row{'' if rows == 1 else 's'} x {cols} columns"

    def _text(self) -> str:
        if self.df.empty:
            return self._header()
        preview = pd.DataFrame(self.df).to_string(
            index=False, max_rows=10, max_cols=8, max_colwidth=40
        )
        lines = [f"{self._header()} (the data: .df)", preview]
        if self.description:
            lines.insert(1, self.description)
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self._text(), "text/html": self.to_html()}

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return f"<{self._header()}>"

    def __len__(self) -> int:
        return len(self.df)


# ---------------------------------------------------------------- model hooks


def _cases_frame(run: Run) -> pd.DataFrame:
    """One row per case: counts, pass rate, class (and verdict), the first reason it failed."""
    stab = run.stability()
    cols = ["case_id", "runs", "passed", "failed", "errors", "pass_rate", "classification"]
    cols += [c for c in ("verdict", "not_agent", "not_agent_blame") if c in stab.columns]
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
    return Table(frame(run), f"{label} · {kind}")


def suite_table(suite: Suite) -> Table:
    """`suite.table()`: the suite's cases (id, name, mode, turns, assertions, tags, source)."""
    return Table(suite.df, f"Suite {suite.name or suite.id} · cases")


def compare_table(comparison: Comparison) -> Table:
    """`compare(a, b).table()`: the per-case change, worse / better in colour."""
    summary = str(comparison.attrs.get("summary", "")) or None
    return Table(comparison, "Comparison · per-case change", description=summary)
