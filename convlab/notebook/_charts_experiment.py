"""The charts of an experiment: the case x variant heatmap of pass rates, and pass rate
against cost or latency with the Pareto front marked.

`exp.plot.matrix()` and `exp.plot.tradeoff()` (`ExperimentPlots`); the module functions take
an Experiment or the frame the chart is drawn from (`matrix_frame`, the leaderboard), so a
filtered frame charts the same way. Variant names and case ids are escaped.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from convlab._readable import pct
from convlab.analysis.leaderboard import matrix_frame, pareto_front
from convlab.model.experiment import VARIANT_COLUMN, Experiment
from convlab.notebook._charts_base import (
    as_frame,
    axis_for_cases,
    base_layout,
    esc,
    need,
    new_figure,
    num,
    records,
    row_height,
    short,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TRADEOFF_AXES", "ExperimentPlots", "matrix", "tradeoff"]

TRADEOFF_AXES = {
    "cost": ("cost_usd", "cost (USD, whole run)", "$"),
    "latency": ("latency_p50_ms", "agent reply latency, median (ms)", ""),
    "latency_p95": ("latency_p95_ms", "agent reply latency, 95th percentile (ms)", ""),
    "tokens": ("total_tokens", "tokens (whole run)", ""),
}
"""`tradeoff(x=...)` choices: the leaderboard column drawn on the x axis, its title, prefix."""
_FRONT = "#0969da"
_OFF = "#8c959f"
_SCALE = [[0.0, "#cf222e"], [0.5, "#d4a72c"], [0.8, "#4d9a2c"], [1.0, "#1a7f37"]]
"""Red at 0% through amber at 50% to green at 100%: Yao's class colours."""


class ExperimentPlots:
    """`exp.plot`: the charts of one experiment, each a Plotly figure."""

    def __init__(self, experiment: Experiment) -> None:
        self.experiment = experiment

    def matrix(self) -> Any:
        """Pass rate per case (rows) and variant (columns) as a heatmap."""
        return matrix(self.experiment)

    def tradeoff(self, x: str = "cost", baseline: str | None = None) -> Any:
        """Pass rate against `x` ("cost", "latency", "latency_p95" or "tokens") per
        variant, with its interval, the Pareto front joined and marked."""
        return tradeoff(self.experiment, x, baseline)

    def __repr__(self) -> str:
        return (
            "exp.plot: 2 charts (each returns a Plotly figure)\n"
            "  .matrix()  pass rate per case and variant (heatmap)\n"
            "  .tradeoff(x='cost'|'latency')  pass rate against cost or latency, Pareto front"
        )


def matrix(data: Experiment | pd.DataFrame) -> Any:
    """Heatmap of pass rates: one row per case (suite order), one column per variant.

    `data`: an Experiment, or `exp.matrix().df` (case_id, then one column per variant).
    """
    if isinstance(data, Experiment):
        df = matrix_frame(data)
    else:
        df = as_frame(data, "matrix", "an Experiment or exp.matrix().df")
        need(df, ("case_id",), "matrix", "an Experiment or exp.matrix().df")
    variants = list(df.attrs.get("variants") or [c for c in df.columns if c != "case_id"][:-2])
    cases = [str(c) for c in df["case_id"]]
    ys = [esc(c) for c in cases]
    xs = [esc(v) for v in variants]
    z = [[num(row[v], math.nan) for v in variants] for row in records(df)]
    text = [[pct(v) if not math.isnan(v) else "not run" for v in line] for line in z]
    trace = {
        "type": "heatmap",
        "x": xs,
        "y": ys,
        "z": [[None if math.isnan(v) else v for v in line] for line in z],
        "zmin": 0,
        "zmax": 100,
        "colorscale": _SCALE,
        "text": text,
        "texttemplate": "%{text}" if len(cases) * len(variants) <= 400 else "",
        "hovertemplate": "<b>%{y}</b><br>variant %{x}: %{text}<extra></extra>",
        "xgap": 2,
        "ygap": 2,
        "colorbar": {"title": {"text": "pass rate"}, "ticksuffix": "%", "thickness": 12},
        "showscale": True,
    }
    n = len(cases)
    layout = base_layout(
        f"Pass rate per case and variant — {n} case{'s' if n != 1 else ''}, "
        f"{len(variants)} variant{'s' if len(variants) != 1 else ''}",
        "green: passes every run; red: never passes; grey: not run",
    )
    layout.update(
        yaxis=axis_for_cases(ys, [short(c) for c in cases]),
        xaxis={"type": "category", "side": "top", "tickangle": 0, "title": {"text": ""}},
    )
    return new_figure([trace], layout, max(row_height(n), 24) * max(n, 2), top_axis=True)


def _frame(data: Any, baseline: str | None) -> pd.DataFrame:
    if isinstance(data, Experiment):
        frame: pd.DataFrame = data.leaderboard(baseline=baseline)
        return frame
    hint = "an Experiment or exp.leaderboard()"
    df = as_frame(data, "tradeoff", hint)
    need(df, (VARIANT_COLUMN, "pass_rate"), "tradeoff", hint)
    return df


def tradeoff(data: Experiment | pd.DataFrame, x: str = "cost", baseline: str | None = None) -> Any:
    """Pass rate (with its 95% interval) against cost or latency, one point per variant; the
    variants no other beats on both (the Pareto front: cheaper or faster and as good, or
    better and as cheap) are joined by a line and drawn larger.

    `data`: an Experiment or its `leaderboard()`. A variant whose x figure is unknown (a
    model the price database does not know) is left off the chart and named below the title.
    """
    if x not in TRADEOFF_AXES:
        raise ValueError(f"x={x!r}: use one of {', '.join(TRADEOFF_AXES)}")
    column, title, prefix = TRADEOFF_AXES[x]
    df = _frame(data, baseline)
    rows = records(df)
    xs = [num(r.get(column), math.nan) for r in rows]
    ys = [num(r.get("pass_rate"), math.nan) for r in rows]
    front = pareto_front(xs, ys)
    shown = [i for i, v in enumerate(xs) if not math.isnan(v) and not math.isnan(ys[i])]
    missing = [str(rows[i][VARIANT_COLUMN]) for i in range(len(rows)) if i not in shown]
    traces: list[dict[str, Any]] = []
    line = sorted((xs[i], ys[i]) for i in shown if front[i])
    if len(line) > 1:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "Pareto front",
                "x": [p[0] for p in line],
                "y": [p[1] for p in line],
                "line": {"color": _FRONT, "width": 2, "dash": "dot", "shape": "hv"},
                "hoverinfo": "skip",
            }
        )
    for on, name, color, size in ((True, "on the front", _FRONT, 14), (False, "beaten", _OFF, 10)):
        idx = [i for i in shown if front[i] == on]
        if not idx:
            continue
        low = [ys[i] - num(rows[i].get("ci_low"), ys[i]) for i in idx]
        high = [num(rows[i].get("ci_high"), ys[i]) - ys[i] for i in idx]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": name,
                "x": [xs[i] for i in idx],
                "y": [ys[i] for i in idx],
                "text": [short(rows[i][VARIANT_COLUMN], 32) for i in idx],
                "textposition": "top center",
                "marker": {
                    "color": color,
                    "size": size,
                    "symbol": "diamond" if on else "circle",
                    "line": {"color": "white", "width": 1},
                },
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": high,
                    "arrayminus": low,
                    "color": color,
                    "thickness": 1,
                    "width": 4,
                },
                "customdata": [
                    [
                        esc(rows[i][VARIANT_COLUMN]),
                        esc(rows[i].get("agent", "")),
                        pct(rows[i].get("ci_low")),
                        pct(rows[i].get("ci_high")),
                    ]
                    for i in idx
                ],
                "hovertemplate": (
                    "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>pass rate %{y:.1f}% "
                    "(95% interval %{customdata[2]} to %{customdata[3]})<br>"
                    + f"{esc(title)}: {prefix}%{{x:,.4g}}<extra></extra>"
                ),
            }
        )
    note = "the front: no other variant is as good for less"
    if missing:
        note += f"; not shown ({esc(title)} unknown): " + ", ".join(short(m, 24) for m in missing)
    layout = base_layout(f"Pass rate against {esc(title)} — {len(rows)} variants", note)
    layout.update(
        xaxis={
            "title": {"text": esc(title)},
            "tickprefix": prefix,
            "rangemode": "tozero",
            "zeroline": False,
        },
        yaxis={
            "title": {"text": "pass rate (% of runs passed, mean over cases)"},
            "range": [-5, 108],
            "ticksuffix": "%",
        },
    )
    if not shown:
        layout["annotations"] = [
            {
                "text": f"no variant has a known {esc(title)}",
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 14, "color": "#57606a"},  # muted text (4.5:1 and more)
            }
        ]
    return new_figure(traces, layout, 420)
