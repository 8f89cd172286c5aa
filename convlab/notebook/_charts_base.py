"""What every convlab chart shares: the Figure's mime bundle, escaping, input checks and one
compact layout.

Why our own bundle: plotly's own display goes through `pio.renderers`, which under nbclient
is the Plotly mimetype alone, and nbconvert drops that from HTML. Our figures
carry the mimetype (JupyterLab, VS Code) *and* a `text/html` div without plotly.js, so a report
that loads plotly.js once renders every chart with no network. In a kernel a Jupyter server
started (JupyterLab, Notebook 7) the `text/html` copy is left out: JupyterLab draws the
mimetype and saves a PNG of each chart, which is what a saved notebook shows elsewhere.

Why escape: case ids and statuses come from files and agents. Plotly.js draws labels, tick
labels and hover text as pseudo-HTML (`<a href>`, `<b>`, `<br>`, `<span style>`...), so every
untrusted string is escaped (`<`, `>`, `&`) before it enters a figure; plotly.js turns the
entities back into literal characters.

plotly is imported inside functions only: `import convlab` never loads it.
"""

from __future__ import annotations

import html
import json
import math
import os
import types
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from convlab._readable import shorten
from convlab.htmlkit import (
    CLASS_COLORS,
    LIGHT,
    STABILITY_COLORS,
    STABILITY_TEXT_COLORS,
    STATUS_COLORS,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CONFIG",
    "NO_VERDICT",
    "NO_VERDICT_COLOR",
    "PLOTLY_MIME",
    "STABILITY_LABELS",
    "TOP_AXIS_AT",
    "as_frame",
    "axis_for_cases",
    "base_layout",
    "case_labels",
    "class_color",
    "dress",
    "esc",
    "list_cases",
    "mime_bundle",
    "need",
    "new_figure",
    "num",
    "records",
    "row_height",
    "runs_note",
    "short",
    "stability_color",
    "stability_text_color",
]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True}
"""Plotly.js config for both the mimetype and the HTML div (no logo; follow the cell width)."""

STABILITY_LABELS = {
    "stable": "stable (every run passed)",
    "mostly stable": "mostly stable (flaky, 80-99%)",
    "unstable": "unstable (flaky, 50-79%)",
    "highly unstable": "highly unstable (flaky, <50%)",
    "always fails": "always fails (no run passed)",
    "one run": "one run (too few to tell)",
}
"""`stability` in a legend (best first): a case that fails every run is `always fails`, never
unstable; the flaky ones carry Yao's pass-rate ranges."""
NO_VERDICT = "no verdict (not run)"
NO_VERDICT_COLOR = "#8c959f"
_INK = "#1f2328"
_MUTED = "#57606a"
_GRID = "#eaeef2"
_LABEL_CAP = 48
TOP_AXIS_AT = 25
"""Above this many case rows the value axis moves to the top, beside the worst cases."""
_LEGEND_WIDTH = 760.0
"""Width a horizontal legend may fill before it wraps (a notebook cell is ~800-1000 px)."""
_MISSING_JS = (
    "This chart needs plotly.js on the page: open the notebook in Jupyter, or export it with "
    "convlab (which loads plotly.js once)."
)


def esc(value: Any) -> str:
    """Untrusted text made inert for plotly.js's pseudo-HTML (shown literally)."""
    return html.escape(str(value), quote=False)


def short(value: Any, cap: int = _LABEL_CAP) -> str:
    """An escaped, length-capped label for an axis tick (the hover keeps the full text)."""
    return esc(shorten(str(value), cap))


def need(df: pd.DataFrame, columns: Iterable[str], chart: str, hint: str) -> None:
    """Raise a ValueError naming the columns a chart needs that `df` lacks, and what to pass."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"{chart}() cannot draw this DataFrame: it has no column(s) {', '.join(missing)}. "
            f"Pass {hint}."
        )


def row_height(n: int) -> int:
    """Pixels per category row: roomy for a few cases, compact (still hoverable) for hundreds."""
    if n <= 20:
        return 28
    if n <= 80:
        return 20
    return 15


def base_layout(title: str, subtitle: str = "") -> dict[str, Any]:
    """A small, explicit layout (not plotly's default template copied into every figure's JSON).

    `title` and `subtitle` are trusted (built here from escaped parts). Height, top margin
    and legend place are set by `new_figure`, which knows the legend entries.
    """
    text = f"<b>{title}</b>"
    for line in _wrap(subtitle):
        text += f"<br><span style='font-size:12px;color:{_MUTED}'>{line}</span>"
    axis = {
        "gridcolor": _GRID,
        "linecolor": "#d0d7de",
        "zerolinecolor": "#d0d7de",
        "automargin": True,
        "title": {"standoff": 8},
    }
    return {
        "template": {"layout": {"xaxis": axis, "yaxis": axis}},
        "title": {
            "text": text,
            "x": 0.01,
            "xanchor": "left",
            "xref": "container",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            "pad": {"t": 12},
            "font": {"size": 15},
        },
        "font": {
            "family": '-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif',
            "size": 12,
            "color": _INK,
        },
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "hoverlabel": {"align": "left", "bgcolor": "white", "font": {"color": _INK}},
        "hovermode": "closest",
        "margin": {"l": 10, "r": 20, "b": 50, "autoexpand": True},
    }


def _wrap(text: str, width: int = 96) -> list[str]:
    """Subtitle lines, broken after '; ' so none runs past a narrow cell (plotly never wraps)."""
    lines: list[str] = []
    for part in text.split("; ") if text else []:
        if lines and len(html.unescape(lines[-1])) + len(html.unescape(part)) + 2 <= width:
            lines[-1] += "; " + part
        else:
            lines.append(part)
    return lines


def _legend_rows(names: Sequence[str], width: float = _LEGEND_WIDTH) -> int:
    """How many rows a horizontal legend of these entries takes (estimated, 12 px font)."""
    rows, used = 1, 0.0
    for name in names:
        w = 44 + 6.8 * len(html.unescape(name))
        if used and used + w > width:
            rows, used = rows + 1, 0.0
        used += w
    return rows if names else 0


def _place(layout: dict[str, Any], traces: Sequence[Any], plot_height: int, top_axis: bool) -> None:
    """Title, then subtitle, then a horizontal legend, then the plot: sized in pixels so
    none overlaps, whatever the number of cases (the legend stays near the worst rows)."""
    names = [
        str(t.get("name", ""))
        for t in traces
        if isinstance(t, dict) and t.get("name") and t.get("showlegend", True) is not False
    ]
    top = 32 + 18 * str(layout["title"]["text"]).count("<br>")
    rows = _legend_rows(names)
    margin_t = top + 24 * rows + (50 if top_axis else 12)
    height = margin_t + plot_height + int(layout["margin"]["b"])
    layout["height"] = height
    layout["margin"]["t"] = margin_t
    layout["showlegend"] = bool(names)
    layout["legend"] = {
        "orientation": "h",
        "xref": "container",
        "x": 0.01,
        "xanchor": "left",
        "yref": "container",
        "y": 1 - top / height,
        "yanchor": "top",
        "traceorder": "normal",
        "itemclick": "toggle",
    }


def axis_for_cases(labels: Sequence[str], ticks: Sequence[str]) -> dict[str, Any]:
    """A category axis listing cases top to bottom in the given order.

    `labels` are the (unique, escaped) category values; `ticks` what is drawn for each
    (escaped, capped). The axis is forced to `category` so ids like '1', '2' stay labels.
    """
    n = len(labels)
    return {
        "type": "category",
        "categoryorder": "array",
        "categoryarray": list(labels),
        "tickmode": "array",
        "tickvals": list(labels),
        "ticktext": list(ticks),
        # fixed, first row on top: autorange would pad scatter traces by 5% of the axis,
        # hundreds of pixels of blank rows on a tall chart
        "autorange": False,
        "range": [n - 0.5, -0.5],
        "tickfont": {"size": 12 if n <= 80 else 10},
        "showgrid": False,
        "title": {"text": ""},
    }


def class_color(cls: Any) -> str:
    """The palette colour of one of Yao's classes (a rate band; grey for none)."""
    return CLASS_COLORS.get(str(cls), NO_VERDICT_COLOR)


_ONCE = {"passed (one run)": "passed", "failed (one run)": "failed"}
"""A case run once, in a chart: coloured by that run's result."""


def stability_color(word: Any) -> str:
    """The fill colour of a `stability` word in a chart (grey for no verdict)."""
    once = _ONCE.get(str(word))
    return STATUS_COLORS[once] if once else STABILITY_COLORS.get(str(word), NO_VERDICT_COLOR)


def stability_text_color(word: Any) -> str:
    """The colour of a `stability` word's chart text on a light background (4.5:1 or more)."""
    once = _ONCE.get(str(word))
    return LIGHT[once] if once else STABILITY_TEXT_COLORS.get(str(word), LIGHT["muted"])


def _title_text(title: Any) -> str:
    """A figure title without markup, for text/plain."""
    text = str(title or "").split("<br>")[0]
    while "<" in text and ">" in text.split("<", 1)[1]:
        head, rest = text.split("<", 1)
        text = head + rest.split(">", 1)[1]
    return html.unescape(text).strip()


def mime_bundle(
    fig: Any, include: Any = None, exclude: Any = None, div_id: str | None = None
) -> dict[str, Any]:
    """The Plotly mimetype (data, layout, config), an HTML div without plotly.js, and text.

    The HTML calls `Plotly.newPlot` on the page's global `window.Plotly` (which plotly.min.js
    sets even when require.js is present); where it is missing, the div says so instead of
    staying blank.
    """
    import plotly.io as pio

    div_id = div_id or f"convlab-{uuid.uuid4().hex}"
    bundle: dict[str, Any] = {}
    if _wanted(PLOTLY_MIME, include, exclude):
        spec = json.loads(pio.to_json(fig, validate=False, remove_uids=False))
        spec["config"] = dict(CONFIG)
        bundle[PLOTLY_MIME] = spec
    if _wanted("text/html", include, exclude) and not _draws_plotly_itself():
        div = fig.to_html(
            full_html=False, include_plotlyjs=False, config=CONFIG, div_id=div_id, validate=False
        )
        fallback = (
            f'<script>if(typeof window.Plotly==="undefined"){{var e=document.getElementById('
            f'"{div_id}");if(e){{e.style.height="auto";e.style.color="{_MUTED}";'
            f"e.textContent={json.dumps(_MISSING_JS)};}}}}</script>"
        )
        built = getattr(fig, "_convlab_theme", None)
        if built is not None:
            from convlab.notebook._theme import follow_script

            fallback += follow_script(div_id, built)
        bundle["text/html"] = div + fallback
    if _wanted("text/plain", include, exclude):
        title = _title_text(fig.layout.title.text) or "chart"
        bundle["text/plain"] = f"<convlab Figure: {title} ({len(fig.data)} traces)>"
    return bundle


def _draws_plotly_itself() -> bool:
    """Whether this kernel's front end draws the Plotly mimetype itself and keeps a picture
    of it: a kernel a Jupyter server started (JupyterLab, Notebook 7; it names the session in
    `JPY_SESSION_NAME`), not VS Code's. JupyterLab's Plotly renderer stores a PNG of each
    chart it draws, which is what `jupyter nbconvert` and GitHub show of the saved notebook,
    so a `text/html` copy of the chart would only add bytes (`convlab report` executes the
    notebook again, headless, where the copy is made)."""
    from convlab.notebook.progress import in_kernel

    env = os.environ
    return "JPY_SESSION_NAME" in env and "VSCODE_PID" not in env and in_kernel()


def _wanted(mime: str, include: Any, exclude: Any) -> bool:
    return (not include or mime in include) and not (exclude and mime in exclude)


def _convlab_bundle(
    fig: Any, include: Any = None, exclude: Any = None, **kwargs: Any
) -> dict[str, Any]:
    return mime_bundle(fig, include, exclude)


def dress(fig: Any) -> Any:
    """Give one `go.Figure` convlab's rich display; it stays exactly a `go.Figure`.

    plotly's `_ipython_display_` would route display through `pio.renderers` (the mimetype
    alone under nbclient), so the instance hides it (and `_repr_html_`) and IPython asks
    `_repr_mimebundle_`.
    Instance attributes (set past plotly's validating `__setattr__`), not a subclass: outside
    code checks that a chart is plotly's own Figure. Copies made by plotly (`go.Figure(fig)`,
    pickle, deepcopy) are plain figures again and display as plotly would.
    """
    object.__setattr__(fig, "_repr_mimebundle_", types.MethodType(_convlab_bundle, fig))
    object.__setattr__(fig, "_ipython_display_", None)
    # nor plotly's `_repr_html_`: IPython would fill a mimetype our bundle leaves out with it
    object.__setattr__(fig, "_repr_html_", None)
    return fig


def new_figure(
    data: Sequence[dict[str, Any]], layout: dict[str, Any], plot_height: int, top_axis: bool = False
) -> Any:
    """A dressed `go.Figure` from trace dicts and a `base_layout`, sized to fit, in the chart
    theme (`convlab.options.theme`)."""
    import plotly.graph_objects as go

    from convlab.notebook._theme import themed

    _place(layout, data, plot_height, top_axis)
    data, layout, theme, follow = themed(list(data), layout)
    fig = dress(go.Figure(data=data, layout=layout))
    if follow:  # "auto": its HTML re-colours it to the page it is drawn in
        object.__setattr__(fig, "_convlab_theme", theme)
    return fig


def as_frame(data: Any, chart: str, hint: str) -> pd.DataFrame:
    """`data` if it is a DataFrame; anything else is a TypeError saying what to pass."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    raise TypeError(f"{chart}() takes {hint}, not {type(data).__name__}")


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of `df` as dicts with string keys."""
    return [{str(k): v for k, v in r.items()} for r in df.to_dict("records")]


def case_labels(df: pd.DataFrame) -> list[str]:
    """Raw (unescaped) row labels: the case id, plus the variant in a by-variant table."""
    ids = [str(c) for c in df["case_id"]]
    if "variant" in df.columns:
        ids = [f"{c} [{v}]" if str(v) else c for c, v in zip(ids, df["variant"], strict=True)]
    seen: dict[str, int] = {}
    out = []
    for label in ids:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def runs_note(runs: Sequence[int]) -> str:
    """'10 runs each' (or '3 to 5 runs each'): how much evidence each row stands on."""
    counts = sorted({int(r) for r in runs if r})
    if not counts:
        return "no runs"
    if len(counts) == 1:
        return f"{counts[0]} run{'s' if counts[0] != 1 else ''} each"
    return f"{counts[0]} to {counts[-1]} runs each"


def num(value: Any, default: float) -> float:
    """A float from a frame cell (None, NaN, pd.NA or junk give `default`)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(out) else out


def list_cases(labels: list[str], cap: int = 15) -> str:
    """Escaped case ids for a hover, one per line, capped."""
    if not labels:
        return "(none)"
    shown = "<br>".join(short(x, 60) for x in labels[:cap])
    more = len(labels) - cap
    return shown + (f"<br>… and {more} more" if more > 0 else "")
