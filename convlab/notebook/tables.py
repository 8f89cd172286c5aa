"""Interactive tables: sortable, searchable DataTables (itables) that work with no network.

`run.table(kind)`, `suite.table()` and `compare(a, b).table()` return a `Table`: `.df` is the
untouched pandas frame (the source of truth), its HTML an itables DataTable in offline mode.

How the DataTables bundle travels: once per page (convlab.htmlkit.bundle). In a kernel the
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
`allow_html=True` only because every cell and header is escaped first (html.escape, in
convlab.notebook._cells), then wrapped in fixed markup: coloured status badges, `<details>`
for long texts (shortened to `text_limit` characters in the cell, the full text one click
away and still searchable).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from convlab._readable import visible
from convlab.formats._base import did_you_mean
from convlab.htmlkit import (
    bundle_html,
    carries_bundle,
    dedupe_bundles,
    missing_bundle_html,
    own_namespace,
    style_tag,
)
from convlab.notebook._cells import escape, prepare

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
    "worst_first",
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
    "paths",
    "main_path_share",
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

_PREVIEW_CELL = re.compile(
    r'(<t[hdr])\s+style="(?:border:1px solid #ddd;padding:8px|text-align: right;)"'
)
_LOADING = re.compile(r"<td[^>]*>\s*Loading ITables[^<]*<code>[^<]*</code>.*?</td>", re.DOTALL)


# ---------------------------------------------------------------- frames -> HTML


def _light_preview(table: str) -> str:
    """itables' table HTML with its static preview's per-cell inline styles dropped (one rule
    in `htmlkit.PREVIEW_CSS` draws them): a tenth of a small table's bytes. Its "Loading
    ITables from the init_notebook_mode cell... (need help?)" line, wrong here, says
    "Loading the table…"."""
    table = _LOADING.sub("<td>Loading the table…</td>", table, count=1)
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
    theme: bool = True,
) -> str:
    """Offline interactive HTML for any frame, safe to embed in a notebook output, a card or a
    report: self-contained, or with `bundle=False` waiting for the page's one bundle loader
    (and saying so over its static preview when the page has none). `theme=False` leaves out
    the theme's stylesheet, for a table in an output that has it already (after a card)."""
    from itables import to_html_datatable

    prepared, html_columns = prepare(df, text_limit, max_bytes)
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
    parts = ['<div class="convlab cl-table">', style_tag() if theme else ""]
    if caption:
        parts.append(f'<div class="cl-caption">{escape(caption)}</div>')
    if description:
        parts.append(f'<div class="cl-desc">{escape(description)}</div>')
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

    def to_html(self, *, bundle: bool = True, theme: bool = True) -> str:
        """The offline interactive HTML (with the DataTables bundle unless `bundle=False`;
        without the theme's stylesheet with `theme=False`)."""
        return frame_html(
            self.shown,
            self.caption,
            description=self.description,
            text_limit=self.text_limit,
            max_bytes=self.max_bytes,
            bundle=bundle,
            theme=theme,
        )

    def after_card_html(self) -> str:
        """The notebook output's table when it follows a convlab card in the same output:
        the card brings the theme's stylesheet, so the table does not repeat it."""
        return self.to_html(bundle=carries_bundle(), theme=False)

    def _header(self) -> str:
        rows, cols = self.shown.shape
        what = self.caption or "Table"
        return f"{what}: {rows:,} row{'' if rows == 1 else 's'} x {cols} columns"

    def _text(self) -> str:
        if self.df.empty:
            return visible(self._header())
        preview = pd.DataFrame(self.shown).to_string(
            index=False, max_rows=10, max_cols=8, max_colwidth=40
        )
        lines = [f"{self._header()} (the data: .df)", preview]
        if self.description:
            lines.insert(1, self.description)
        return visible("\n".join(lines))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self._text(), "text/html": self._repr_html_()}

    def _repr_html_(self) -> str:
        """The notebook output: the bundle only where this output is its carrier (in a
        kernel session, the first table shown; convlab.htmlkit.bundle)."""
        return self.to_html(bundle=carries_bundle())

    def __repr__(self) -> str:
        return visible(f"<{self._header()}>")

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


def worst_first(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in the pass-rate chart's order: the lowest pass rate first (an instance: what did
    not pass before what passed), what never ran to a verdict last; ties in their order."""
    from convlab.analysis.stats import EXCLUDED_STATUSES

    if "pass_rate" in df.columns:
        return df.sort_values("pass_rate", kind="stable", na_position="last")
    if "status" not in df.columns:
        return df
    rank = df["status"].map(lambda s: 2 if s in EXCLUDED_STATUSES else int(s == "passed"))
    return df.iloc[rank.argsort(kind="stable")]


def run_table(run: Run, kind: str = "instances", worst: bool = False) -> Table:
    """`run.table(kind)`: one of the run's frames as an interactive table (`worst`: in the
    pass-rate chart's order, as the run's card lists them)."""
    frame = KINDS.get(kind)
    if frame is None:
        raise ValueError(
            f"unknown table kind {kind!r}; valid kinds: {', '.join(KINDS)}."
            + did_you_mean(kind, KINDS)
        )
    label = f"Run {run.id}" if run.id else "Run"
    if kind == "stability":
        return stability_table(run.stability(), f"{label} · stability")
    df = worst_first(frame(run)) if worst else frame(run)
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
