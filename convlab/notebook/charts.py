"""Plotly charts of a run: pass rates, stability classes, durations, checkpoints, turns.

`run.plot.pass_rates()` and friends (`RunPlots`) draw one Run; the module functions of the
same names take a Run or the DataFrame the chart is drawn from (`run.stability()`, `run.df`,
`run.checkpoints_df`), so a filtered frame charts the same way. `compare_figure` draws
`convlab.compare(a, b)` (also `Comparison.plot()`).

Every function returns a `Figure`: a `plotly.graph_objects.Figure` whose notebook display also
renders in exported, offline HTML (see `_charts_base`). Choices made for readability:
one row per case, worst (or slowest) first at the top, horizontal bars so long case ids fit,
height growing with the number of cases, and every case id escaped (ids come from files).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from convlab._readable import pct
from convlab.analysis.stats import INTERVALS, stability_word
from convlab.htmlkit import STABILITY_COLORS
from convlab.model.run import Run
from convlab.notebook._charts_base import (
    NO_VERDICT,
    STABILITY_LABELS,
    TOP_AXIS_AT,
    as_frame,
    axis_for_cases,
    base_layout,
    case_labels,
    esc,
    list_cases,
    need,
    new_figure,
    num,
    records,
    row_height,
    runs_note,
    short,
    stability_color,
    stability_text_color,
)
from convlab.notebook._charts_compare import compare_figure
from convlab.notebook._charts_divergence import divergence
from convlab.notebook._charts_run import checkpoints, durations, turns

if TYPE_CHECKING:
    import pandas as pd

    Figure: type[Any]  # built on first use by __getattr__ below

__all__ = [
    "Figure",
    "RunPlots",
    "checkpoints",
    "compare_figure",
    "divergence",
    "durations",
    "pass_rates",
    "stability",
    "turns",
]

_STABILITY_NEEDS = ("case_id", "runs", "passed", "pass_rate", "ci_low", "ci_high")
_INSTANCE_NEEDS = ("case_id", "status")
_STABILITY_HINT = "a Run, run.stability() or run.df"


def __getattr__(name: str) -> Any:
    # `Figure` is plotly's, imported on first use: `import convlab` stays light
    if name == "Figure":
        import plotly.graph_objects as go

        return go.Figure
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RunPlots:
    """`run.plot`: the charts of one run, each a Plotly figure (`Figure`)."""

    _CHARTS = {
        "pass_rates": "pass rate per case by stability, 95% interval (Wilson or Jeffreys)",
        "stability": "number of cases per stability class",
        "durations": "duration of every instance per case (box and points)",
        "checkpoints": "how many dynamic instances reached each checkpoint (funnel)",
        "turns": "turns taken by instances that passed vs did not",
        "divergence": "where a case's runs fork and which branch passes (Sankey)",
    }

    def __init__(self, run: Run) -> None:
        self.run = run

    def pass_rates(self, interval: str = "wilson") -> Any:
        """Pass rate per case (worst first), coloured by stability, with 95% intervals:
        `interval="wilson"` (default) or thinkingbox's `"jeffreys"`."""
        return pass_rates(self.run, interval)

    def stability(self) -> Any:
        """Cases per stability class (stable -> always fails, then one run)."""
        return stability(self.run)

    def durations(self) -> Any:
        """Instance durations per case (slowest first)."""
        return durations(self.run)

    def checkpoints(self) -> Any:
        """Funnel of dynamic instances reaching each checkpoint, per case."""
        return checkpoints(self.run)

    def turns(self) -> Any:
        """Histogram of turns taken, passed vs not passed."""
        return turns(self.run)

    def divergence(self, case_id: str) -> Any:
        """Where the case's runs fork: a Sankey from the first turn through each branch to
        passed / did not pass; node height = runs, colour = the branch's pass-rate band,
        hover = its path."""
        return divergence(self.run, case_id)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._CHARTS})

    def __repr__(self) -> str:
        lines = [f"run.plot: {len(self._CHARTS)} charts (each returns a Plotly figure)"]
        lines += [f"  .{name}()  {what}" for name, what in self._CHARTS.items()]
        return "\n".join(lines)


def stability_frame(data: Any, chart: str, interval: str | None = None) -> pd.DataFrame:
    """The per-case stability table from a Run, a stability frame or an instance frame.

    `interval` ("wilson" or "jeffreys") is computed for a Run or instance frame; a stability
    frame keeps the interval it was made with (None accepts it, a different one is an error).
    """
    if isinstance(data, Run):
        return data.stability(interval=interval or "wilson")
    df = as_frame(data, chart, _STABILITY_HINT)
    if all(c in df.columns for c in _STABILITY_NEEDS):
        made = str(df.attrs.get("interval", "wilson"))
        if interval is not None and interval != made:
            raise ValueError(
                f"this stability frame has {made} intervals; pass the Run or "
                f"run.stability(interval={interval!r}) to draw {interval} intervals"
            )
        return df
    if all(c in df.columns for c in _INSTANCE_NEEDS):
        from convlab.analysis.stats import stability as stability_table

        if "duration_ms" not in df.columns:
            df = df.assign(duration_ms=math.nan)
        return stability_table(df, interval=interval or "wilson")
    need(df, _STABILITY_NEEDS, chart, _STABILITY_HINT)
    raise AssertionError  # pragma: no cover - need() raised


_ONE_RUN = ("passed (one run)", "failed (one run)")
"""A case run once has no stability; its bar still says whether that run passed."""


def _one_run_by_result(row: dict[str, Any], word: str) -> str:
    if word != "one run":
        return word
    return _ONE_RUN[0] if num(row["passed"], 0.0) else _ONE_RUN[1]


def _stability(row: dict[str, Any]) -> str:
    """A row's `stability` word ("" when it has no counted run), from its runs and passes."""
    runs, passed = num(row["runs"], 0.0), num(row["passed"], 0.0)
    return stability_word(int(runs), int(passed))


def pass_rates(data: Any, interval: str | None = None) -> Any:
    """Pass rate per case, worst first, coloured by `stability`, whiskers = 95% interval.

    `data`: a Run, `run.stability()` (also by variant) or `run.df`. `interval`: "wilson"
    (default) or thinkingbox's "jeffreys" credible interval; a stability frame brings its own.
    Cases that never ran to a verdict (all skipped or cancelled) are listed last, greyed, so
    no case silently vanishes.
    """
    if interval is not None and interval not in INTERVALS:
        raise ValueError(f"interval must be 'wilson' or 'jeffreys', got {interval!r}")
    st = stability_frame(data, "pass_rates", interval)
    kind = str(st.attrs.get("interval", interval or "wilson")).capitalize()
    labels = case_labels(st)
    rows = [
        {**r, "label": label, "cls": _one_run_by_result(r, _stability(r))}
        for r, label in zip(records(st), labels, strict=True)
    ]
    rows.sort(key=lambda r: (not r["cls"], num(r["pass_rate"], 101.0)))
    cats = [esc(r["label"]) for r in rows]
    n = len(rows)
    traces = []
    for cls in (*STABILITY_COLORS, *_ONE_RUN, ""):
        group = [r for r in rows if r["cls"] == cls]
        if group:
            traces.append(_rate_bars(cls, group))
    if rows:
        # counts on a right-hand axis: always readable, even on a 0% bar
        traces.append(
            {
                "type": "scatter",
                "x": [None] * n,
                "y": cats,
                "yaxis": "y2",
                "mode": "markers",
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )
    right = [  # counts in the class colour: a 0% bar has no bar to colour
        f"<span style='color:{stability_text_color(r['cls'])}'>"
        + (f"{r['passed']}/{r['runs']}" if r["cls"] else "not run")
        + "</span>"
        for r in rows
    ]
    layout = base_layout(
        f"Pass rate per case — {n} case{'s' if n != 1 else ''}, worst first",
        f"{runs_note([r['runs'] for r in rows])}; bar = share of runs passed, whisker = 95% "
        f"{kind} interval, right = passed/runs",
    )
    yaxis = axis_for_cases(cats, [short(r["label"]) for r in rows])
    layout.update(
        yaxis=yaxis,
        yaxis2={
            **yaxis,
            "overlaying": "y",
            "side": "right",
            "matches": "y",
            "ticktext": right,
        },
        xaxis=_pct_axis("pass rate (% of runs passed)", top=n > TOP_AXIS_AT),
        bargap=0.25,
        shapes=_class_lines(),
        hovermode="y unified",  # the whole row answers: a 0% case (no bar) has a hover too
    )
    return new_figure(traces, layout, row_height(n) * max(n, 2), top_axis=n > TOP_AXIS_AT)


def _rate_bars(cls: str, group: list[dict[str, Any]]) -> dict[str, Any]:
    rates = [num(r["pass_rate"], 0.0) for r in group]
    lows = [num(r["ci_low"], 0.0) for r in group]
    highs = [num(r["ci_high"], 0.0) for r in group]
    return {
        "type": "bar",
        "orientation": "h",
        "name": STABILITY_LABELS.get(cls, cls or NO_VERDICT),
        "x": rates,
        "y": [esc(r["label"]) for r in group],
        "marker": {"color": stability_color(cls), "line": {"width": 0}},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": [max(h - x, 0.0) for h, x in zip(highs, rates, strict=True)],
            "arrayminus": [max(x - lo, 0.0) for lo, x in zip(lows, rates, strict=True)],
            "color": "#424a53",
            "thickness": 1.2,
            "width": 3,
            "visible": bool(cls),
        },
        "customdata": [
            [
                esc(r["label"]),
                int(r["runs"]),
                int(r["passed"]),
                pct(r["ci_low"]),
                pct(r["ci_high"]),
                STABILITY_LABELS.get(cls, cls or NO_VERDICT),
                pct(r["pass_rate"]),
            ]
            for r in group
        ],
        "hovertemplate": (
            "<b>%{customdata[0]}</b><br>pass rate %{customdata[6]}: "
            "%{customdata[2]} of %{customdata[1]} runs passed<br>"
            "95% CI %{customdata[3]} to %{customdata[4]}<br>%{customdata[5]}<extra></extra>"
        ),
    }


def _pct_axis(title: str, top: bool = False) -> dict[str, Any]:
    return {
        "range": [0, 101.5],
        "ticksuffix": "%",
        "dtick": 10,
        "title": {"text": title},
        "side": "top" if top else "bottom",
        "fixedrange": False,
    }


def _class_lines() -> list[dict[str, Any]]:
    """Dotted verticals at the class boundaries (50% and 80%)."""
    return [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": x,
            "x1": x,
            "y0": 0,
            "y1": 1,
            "layer": "below",
            "line": {"color": "#afb8c1", "width": 1, "dash": "dot"},
        }
        for x in (50, 80)
    ]


def stability(data: Any) -> Any:
    """How many cases fall in each `stability` class, stable -> always fails, one run last.

    Every class is shown, even with no case, so charts of different runs read alike. The
    unit is cases (case x variant rows for a by-variant table); hover lists the cases.
    """
    st = stability_frame(data, "stability")
    labels = case_labels(st)
    unit = "case/variant rows" if "variant" in st.columns else "cases"
    groups: dict[str, list[str]] = {cls: [] for cls in STABILITY_COLORS}
    for label, row in zip(labels, records(st), strict=True):
        groups.setdefault(_stability(row) or NO_VERDICT, []).append(label)
    if not groups.get(NO_VERDICT, True):
        groups.pop(NO_VERDICT, None)
    total = sum(len(v) for v in groups.values())
    names = [STABILITY_LABELS.get(k, k) for k in groups]
    counts = [len(v) for v in groups.values()]
    bar = {
        "type": "bar",
        "x": names,
        "y": counts,
        "marker": {"color": [stability_color(k) for k in groups]},
        "text": [f"{c} ({pct(100 * c / total if total else 0)})" for c in counts],
        "textposition": "outside",
        "cliponaxis": False,
        "customdata": [[list_cases(v)] for v in groups.values()],
        "hovertemplate": "<b>%{x}</b>: %{y} " + unit + "<br>%{customdata[0]}<extra></extra>",
        "showlegend": False,
    }
    layout = base_layout(
        f"Stability classes — {total} {unit}",
        f"{runs_note(list(st['runs']))}; a flaky case by its pass rate (Yao's ranges), a case "
        "that never passed apart",
    )
    layout.update(
        xaxis={"type": "category", "title": {"text": "stability"}},
        yaxis={
            "title": {"text": f"number of {unit}"},
            "rangemode": "tozero",
            "range": [0, max(counts or [1]) * 1.18 + 0.5],
            "dtick": max(1, math.ceil(max(counts or [1]) / 8)),
        },
        bargap=0.35,
    )
    return new_figure([bar], layout, 300)
