"""The charts of an experiment: the case x variant heatmap of pass rates, and pass rate
against cost or latency with the Pareto front marked.

`exp.plot.matrix()` and `exp.plot.tradeoff()` (`ExperimentPlots`); the module functions take
an Experiment or the frame the chart is drawn from (`matrix_frame`, the leaderboard), so a
filtered frame charts the same way. Variant names and case ids are escaped.
"""

from __future__ import annotations

import html
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
    When no variant has a cost above zero (no prices: a self-hosted or serve-demo model; or
    agents that cost nothing), the chart is drawn against latency instead, and its subtitle
    says so. Figures that span an order of
    magnitude or more are drawn on a log axis, so the cheap variants do not crowd at zero.
    Each point's name stands in a column right of the plot, joined to its point by a line,
    so no two names overlap however close their points are.
    """
    if x not in TRADEOFF_AXES:
        raise ValueError(f"x={x!r}: use one of {', '.join(TRADEOFF_AXES)}")
    df = _frame(data, baseline)
    rows = records(df)
    # no cost to tell the variants apart (no prices, or nothing charged): latency instead
    fallback = x == "cost" and not any(
        num(r.get(TRADEOFF_AXES["cost"][0]), math.nan) > 0 for r in rows
    )
    if fallback:
        x = "latency"
    column, title, prefix = TRADEOFF_AXES[x]
    xs = [num(r.get(column), math.nan) for r in rows]
    ys = [num(r.get("pass_rate"), math.nan) for r in rows]
    front = pareto_front(xs, ys)
    shown = [i for i, v in enumerate(xs) if not math.isnan(v) and not math.isnan(ys[i])]
    missing = [str(rows[i][VARIANT_COLUMN]) for i in range(len(rows)) if i not in shown]
    log = _log_axis([xs[i] for i in shown])
    traces = _front_line(xs, ys, front, shown)
    for on, name, color, size in ((True, "on the front", _FRONT, 14), (False, "beaten", _OFF, 10)):
        idx = [i for i in shown if front[i] == on]
        if idx:
            traces.append(_points(rows, idx, xs, ys, (name, color, size), (title, prefix)))
    note = "the front: no other variant is as good for less"
    if fallback:
        note = "no variant has a cost (pass prices= to run), so latency is drawn; " + note
    if missing:
        note += f"; not shown ({esc(title)} unknown): " + ", ".join(short(m, 24) for m in missing)
    layout = base_layout(f"Pass rate against {esc(title)} — {len(rows)} variants", note)
    height = max(_PLOT_HEIGHT, _LABEL_STEP * len(shown) + 60)
    labels, right, x_range = _labels(rows, shown, xs, ys, front, log, height)
    layout.update(
        xaxis={
            "title": {"text": esc(title) + (" (log scale)" if log else "")},
            "tickprefix": prefix,
            "type": "log" if log else "linear",
            "range": x_range,
            "zeroline": False,
            **(_log_ticks(x_range, prefix) if log else {}),
        },
        yaxis={
            "title": {"text": "pass rate (% of runs passed, mean over cases)"},
            "range": list(_Y_RANGE),
            "ticksuffix": "%",
        },
        annotations=labels,
    )
    layout["margin"]["r"] = right
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
    return new_figure(traces, layout, height)


_PLOT_HEIGHT = 420
_Y_RANGE = (-5.0, 108.0)
_LABEL_STEP = 18
"""Pixels between two names in the label column (12 px text and a gap)."""
_CHAR_PX = 7.0
"""Width of one character of a 12 px label, a little more than the average (sans-serif)."""
_LOG_SPAN = 10.0
"""Largest / smallest x from which the axis is logarithmic (an order of magnitude)."""


def _log_axis(values: list[float]) -> bool:
    """Whether the x figures span `_LOG_SPAN` or more (all above zero, as a log axis needs)."""
    return bool(values) and min(values) > 0 and max(values) / min(values) >= _LOG_SPAN


def _log_ticks(x_range: list[float], prefix: str) -> dict[str, Any]:
    """Ticks at 1, 2 and 5 times a power of ten inside the (log10) range, written in full."""
    lo, hi = x_range
    values = [
        m * 10.0**k
        for k in range(math.floor(lo), math.ceil(hi) + 1)
        for m in (1, 2, 5)
        if lo <= math.log10(m * 10.0**k) <= hi
    ]
    return {
        "tickmode": "array",
        "tickvals": values,
        "ticktext": [f"{prefix}{v:g}" for v in values],
        "minor": {"showgrid": False},
    }


def _front_line(
    xs: list[float], ys: list[float], front: list[bool], shown: list[int]
) -> list[dict[str, Any]]:
    """The dotted step line through the front's points (none for fewer than two)."""
    line = sorted((xs[i], ys[i]) for i in shown if front[i])
    if len(line) < 2:
        return []
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "Pareto front",
            "x": [p[0] for p in line],
            "y": [p[1] for p in line],
            "line": {"color": _FRONT, "width": 2, "dash": "dot", "shape": "hv"},
            "hoverinfo": "skip",
        }
    ]


def _points(
    rows: list[dict[str, Any]],
    idx: list[int],
    xs: list[float],
    ys: list[float],
    look: tuple[str, str, int],
    axis: tuple[str, str],
) -> dict[str, Any]:
    """The markers of one group of variants (on the front, or beaten), with their intervals."""
    name, color, size = look
    title, prefix = axis
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": [xs[i] for i in idx],
        "y": [ys[i] for i in idx],
        "marker": {
            "color": color,
            "size": size,
            "symbol": "diamond" if name == "on the front" else "circle",
            "line": {"color": "white", "width": 1},
        },
        "error_y": {
            "type": "data",
            "symmetric": False,
            "array": [num(rows[i].get("ci_high"), ys[i]) - ys[i] for i in idx],
            "arrayminus": [ys[i] - num(rows[i].get("ci_low"), ys[i]) for i in idx],
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
                pct(rows[i].get("pass_rate")),
            ]
            for i in idx
        ],
        "hovertemplate": (
            "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>pass rate %{customdata[4]} "
            "(95% interval %{customdata[2]} to %{customdata[3]})<br>"
            + f"{esc(title)}: {prefix}%{{x:,.4g}}<extra></extra>"
        ),
    }


def _x_range(values: list[float], log: bool) -> list[float]:
    """The x axis range: from zero (linear) or a little below the least (log), to a little
    past the largest, where the label column starts."""
    if not values:
        return [0.0, 1.0]
    if log:
        lo, hi = math.log10(min(values)), math.log10(max(values))
        pad = (hi - lo) * 0.06
        return [lo - pad, hi + pad]
    return [0.0, (max(values) or 1.0) * 1.06]


def _spread(wanted: list[float], step: float, low: float, high: float) -> list[float]:
    """Positions as near `wanted` (sorted, pixels) as they can be in the least-squares sense,
    each `step` or more from the next, all within [low, high] when they fit: the classic
    pool-adjacent-violators fit of `wanted[i] - i * step` to a rising sequence."""
    blocks: list[list[float]] = []  # [mean, count]
    for i, w in enumerate(wanted):
        blocks.append([w - i * step, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1] = [
                (blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count),
                blocks[-1][1] + count,
            ]
    fitted = [mean for mean, count in blocks for _ in range(int(count))]
    last = len(wanted) - 1
    return [
        min(max(f + i * step, low + i * step), high - (last - i) * step)
        for i, f in enumerate(fitted)
    ]


def _labels(
    rows: list[dict[str, Any]],
    shown: list[int],
    xs: list[float],
    ys: list[float],
    front: list[bool],
    log: bool,
    height: int,
) -> tuple[list[dict[str, Any]], int, list[float]]:
    """Each variant's name in a column right of the plot, in the order of its points' pass
    rates, at least `_LABEL_STEP` pixels apart, with a thin line to its point; and the right
    margin the column needs, and the x range whose right end it starts at."""
    x_range = _x_range([xs[i] for i in shown], log)
    lo, hi = _Y_RANGE
    per_px = (hi - lo) / height
    order = sorted(shown, key=lambda i: (ys[i], -xs[i]))
    wanted = [(ys[i] - lo) / per_px for i in order]
    placed = _spread(wanted, _LABEL_STEP, _LABEL_STEP / 2, height - _LABEL_STEP / 2)
    names = {i: short(rows[i][VARIANT_COLUMN], 32) for i in shown}
    widest = max((len(html.unescape(n)) for n in names.values()), default=0)
    labels = []
    for i, px in zip(order, placed, strict=True):
        labels.append(
            {
                "text": names[i],
                "x": math.log10(xs[i]) if log else xs[i],
                "y": ys[i],
                "ax": x_range[1],
                "ay": lo + px * per_px,
                "axref": "x",
                "ayref": "y",
                "xanchor": "left",
                "yanchor": "middle",
                "showarrow": True,
                "arrowhead": 0,
                "arrowwidth": 1,
                "arrowcolor": "#afb8c1",  # guide lines
                "standoff": 7 if front[i] else 5,
                "font": {"size": 12, "color": _FRONT if front[i] else "#57606a"},
                "borderpad": 2,
                "captureevents": False,
            }
        )
    return labels, int(widest * _CHAR_PX) + 24, x_range
