"""Instance-level charts of a run: durations, checkpoint funnels, turns taken.

Split from `charts` to keep each module short; `convlab.notebook.charts` re-exports these.
Instances that never ran to a verdict (skipped, blocked, cancelled) are left out of every
chart here, as `convlab.analysis.stats` leaves them out of every rate: their durations and turn
counts say nothing about the agent.
"""

from __future__ import annotations

import math
from statistics import median
from typing import TYPE_CHECKING, Any

from convlab._readable import pct
from convlab.analysis.stats import EXCLUDED_STATUSES, classify
from convlab.htmlkit import STATUS_COLORS
from convlab.model.run import Run
from convlab.notebook._charts_base import (
    NO_VERDICT_COLOR,
    TOP_AXIS_AT,
    as_frame,
    axis_for_cases,
    base_layout,
    class_color,
    esc,
    list_cases,
    need,
    new_figure,
    num,
    records,
    row_height,
    short,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["checkpoints", "durations", "empty_figure", "turns"]

_KEYS = ("variant", "repetition", "run")
_DURATION_HINT = (
    "a Run, run.df (case_id, duration_ms) or run.stability() (duration_mean_ms, "
    "duration_min_ms, duration_max_ms)"
)
_SUMMARY_NEEDS = ("case_id", "duration_mean_ms", "duration_min_ms", "duration_max_ms")
_CHECKPOINT_NEEDS = ("case_id", "checkpoint", "reached")


def _ran(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of instances that ran to a verdict (all rows when there is no status column)."""
    if "status" not in df.columns:
        return df
    return df[~df["status"].astype(str).isin(EXCLUDED_STATUSES)]


def empty_figure(title: str, message: str) -> Any:
    """A small figure saying why there is nothing to draw (never an exception)."""
    layout = base_layout(title)
    layout.update(
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[
            {
                "text": message,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 14, "color": "#57606a"},
            }
        ],
    )
    return new_figure([], layout, 140)


def durations(data: Any) -> Any:
    """Duration per case, slowest first: a box per case plus one dot per instance.

    `data`: a Run or `run.df` (dots coloured by status), or `run.stability()` (mean with a
    min-max whisker). Seconds are used once any instance takes 10 s or more.
    """
    df = data.df if isinstance(data, Run) else as_frame(data, "durations", _DURATION_HINT)
    if not {"case_id", "duration_ms"} <= set(df.columns) and set(_SUMMARY_NEEDS) <= set(df.columns):
        return _duration_summary(df)
    need(df, ("case_id", "duration_ms"), "durations", _DURATION_HINT)
    df = _ran(df)
    title = "Duration per case"
    if df.empty:
        return empty_figure(title, "No instance ran to a verdict: no durations to show.")
    ms = [num(v, math.nan) for v in df["duration_ms"]]
    scale, unit = (
        (1000.0, "s")
        if max((v for v in ms if not math.isnan(v)), default=0) >= 1e4
        else (
            1.0,
            "ms",
        )
    )
    ids = [str(c) for c in df["case_id"]]
    by_case: dict[str, list[float]] = {}
    for cid, v in zip(ids, ms, strict=True):
        by_case.setdefault(cid, []).append(v)
    order = sorted(by_case, key=lambda c: -_mean(by_case[c]))
    x = [v / scale for v in ms]
    statuses = [str(s) for s in df["status"]] if "status" in df.columns else ["ran"] * len(ids)
    keys = [df[k].tolist() if k in df.columns else [""] * len(ids) for k in _KEYS]
    traces: list[dict[str, Any]] = [
        {
            "type": "box",
            "orientation": "h",
            "x": x,
            "y": [esc(c) for c in ids],
            "name": "spread (box = quartiles, dashes = mean)",
            "boxpoints": False,
            "boxmean": True,
            "fillcolor": "rgba(140,149,159,0.18)",
            "line": {"color": "#8c959f", "width": 1},
            "hoverinfo": "skip",
        }
    ]
    for status in dict.fromkeys(statuses):
        idx = [i for i, s in enumerate(statuses) if s == status]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": esc(status),
                "x": [x[i] for i in idx],
                "y": [esc(ids[i]) for i in idx],
                "marker": {
                    "color": STATUS_COLORS.get(status, NO_VERDICT_COLOR),
                    "size": 7,
                    "opacity": 0.8,
                    "line": {"color": "white", "width": 0.5},
                },
                "customdata": [
                    [
                        esc(ids[i]),
                        esc(status),
                        f"<br>variant {esc(keys[0][i])}" if str(keys[0][i]) else "",
                        esc(_from_one(keys[1][i])),
                        esc(_from_one(keys[2][i])),
                    ]
                    for i in idx
                ],
                "hovertemplate": (
                    "<b>%{customdata[0]}</b><br>%{customdata[1]} in %{x:.3~f} " + unit + "<br>"
                    "run %{customdata[4]}, repetition %{customdata[3]}%{customdata[2]}"
                    "<extra></extra>"
                ),
            }
        )
    n = len(order)
    layout = base_layout(
        f"{title} — {len(ids)} instances of {n} case{'s' if n != 1 else ''}, slowest first",
        "box = quartiles and range, dashes = mean; dots = instances, coloured by status",
    )
    cats = [esc(c) for c in order]
    layout.update(
        yaxis=axis_for_cases(cats, [short(c) for c in order]),
        xaxis={
            "title": {"text": f"duration per instance ({unit})"},
            "rangemode": "tozero",
            "side": "top" if n > TOP_AXIS_AT else "bottom",
        },
    )
    return new_figure(traces, layout, row_height(n) * max(n, 2), top_axis=n > TOP_AXIS_AT)


def _mean(values: list[float]) -> float:
    ok = [v for v in values if not math.isnan(v)]
    return sum(ok) / len(ok) if ok else -1.0


def _duration_summary(st: pd.DataFrame) -> Any:
    """Mean duration per case with a min-max whisker (from a stability table)."""
    rows = sorted(records(st), key=lambda r: -num(r["duration_mean_ms"], -1.0))
    rows = [r for r in rows if not math.isnan(num(r["duration_mean_ms"], math.nan))]
    title = "Mean duration per case"
    if not rows:
        return empty_figure(title, "No case ran to a verdict: no durations to show.")
    top = max(num(r["duration_max_ms"], 0.0) for r in rows)
    scale, unit = (1000.0, "s") if top >= 1e4 else (1.0, "ms")
    mean = [num(r["duration_mean_ms"], 0.0) / scale for r in rows]
    lo = [num(r["duration_min_ms"], 0.0) / scale for r in rows]
    hi = [num(r["duration_max_ms"], 0.0) / scale for r in rows]
    cats = [esc(r["case_id"]) for r in rows]
    trace = {
        "type": "scatter",
        "mode": "markers",
        "name": "mean (whisker: min to max)",
        "x": mean,
        "y": cats,
        "marker": {"color": "#0969da", "size": 8},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": [h - m for h, m in zip(hi, mean, strict=True)],
            "arrayminus": [m - lo_ for lo_, m in zip(lo, mean, strict=True)],
            "color": "#57606a",
            "thickness": 1.2,
            "width": 3,
        },
        "customdata": [[c, f"{a:.3g}", f"{b:.3g}"] for c, a, b in zip(cats, lo, hi, strict=True)],
        "hovertemplate": (
            "<b>%{customdata[0]}</b><br>mean %{x:.3~f} " + unit + "<br>min %{customdata[1]}, "
            "max %{customdata[2]} " + unit + "<extra></extra>"
        ),
    }
    n = len(rows)
    layout = base_layout(
        f"{title} — {n} case{'s' if n != 1 else ''}, slowest first",
        "dot = mean over the counted runs, whisker = fastest to slowest run",
    )
    top = n > TOP_AXIS_AT
    layout.update(
        yaxis=axis_for_cases(cats, [short(r["case_id"]) for r in rows]),
        xaxis={
            "title": {"text": f"duration ({unit})"},
            "rangemode": "tozero",
            "side": "top" if top else "bottom",
        },
    )
    return new_figure([trace], layout, row_height(n) * max(n, 2), top_axis=top)


def _checkpoint_rows(data: Any) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The checkpoint frame (instances that ran) and each case's checkpoint order."""
    if isinstance(data, Run):
        df = data.checkpoints_df
        inst = data.df
        skipped = inst[inst["status"].astype(str).isin(EXCLUDED_STATUSES)]
        if not skipped.empty and not df.empty:
            gone = set(skipped[["case_id", *_KEYS]].itertuples(index=False, name=None))
            keep = [
                k not in gone for k in df[["case_id", *_KEYS]].itertuples(index=False, name=None)
            ]
            df = df[keep]
        order = (
            {c.id: [cp.id for cp in c.checkpoints] for c in data.suite.cases} if data.suite else {}
        )
        return df, order
    df = as_frame(data, "checkpoints", "a Run or run.checkpoints_df")
    need(df, _CHECKPOINT_NEEDS, "checkpoints", "a Run or run.checkpoints_df")
    return df, {}


def checkpoints(data: Any) -> Any:
    """A funnel per dynamic case: how many of its instances reached each checkpoint.

    Checkpoints come in the case's order; bar colour follows the share that reached it, on
    the stability-class scale (green = all, red = under half). A run without checkpoints
    gives a figure that says so.
    """
    df, order = _checkpoint_rows(data)
    title = "Checkpoints reached"
    if df.empty:
        return empty_figure(
            title, "No checkpoints in this run (only dynamic cases have checkpoints)."
        )
    keys = [k for k in _KEYS if k in df.columns]
    cases: dict[str, dict[str, list[Any]]] = {}
    instances: dict[str, set[tuple[Any, ...]]] = {}
    for row in records(df):
        cid, cp = str(row["case_id"]), str(row["checkpoint"])
        cases.setdefault(cid, {}).setdefault(cp, []).append(row)
        instances.setdefault(cid, set()).add(tuple(row[k] for k in keys))
    case_order = [c for c in order if c in cases] + [c for c in cases if c not in order]
    ticks = [short(c, 32) for c in case_order]
    if len(set(ticks)) < len(ticks):
        ticks = [esc(c) for c in case_order]
    traces = []
    for cid, tick in zip(case_order, ticks, strict=True):
        cps = cases[cid]
        names = [c for c in order.get(cid, []) if c in cps] + [
            c for c in cps if c not in order.get(cid, [])
        ]
        n = len(instances[cid]) if keys else max(len(v) for v in cps.values())
        traces.append(_funnel(cid, tick, [(c, cps[c]) for c in names], n))
    rows = sum(len(t["x"]) for t in traces)
    layout = base_layout(
        f"{title} — {len(traces)} dynamic case{'s' if len(traces) != 1 else ''}",
        "bar = instances that reached the checkpoint, of all that ran; "
        "colour: green = all, yellow = half or more, red = under half",
    )
    layout.update(
        yaxis={
            "autorange": False,
            "range": [rows - 0.5, -0.5],
            "title": {"text": ""},
            "automargin": True,
        },
        xaxis={
            "showticklabels": False,
            "showgrid": False,
            "zeroline": False,
            "title": {"text": "instances that reached the checkpoint"},
        },
        funnelgap=0.25,
    )
    traces.insert(0, _order_seed(traces))
    return new_figure(traces, layout, max(row_height(rows) + 6, 24) * max(rows, 2))


def _order_seed(funnels: list[dict[str, Any]]) -> dict[str, Any]:
    """An invisible first trace fixing the row order of the two-level (case, checkpoint) axis.

    plotly.js orders checkpoint labels by where each label string is first seen across all
    traces, so a label shared by two cases ('2. confirm') could pull rows out of a case's own
    order. Labels are numbered per case; listing every (case, label) pair by number first
    (then case order) makes that first-seen order agree with every case's own order.
    """
    pairs = sorted(
        (i, c, case, label)
        for c, t in enumerate(funnels)
        for i, (case, label) in enumerate(zip(*t["y"], strict=True))
    )
    return {
        "type": "scatter",
        "mode": "markers",
        "x": [None] * len(pairs),
        "y": [[p[2] for p in pairs], [p[3] for p in pairs]],
        "hoverinfo": "skip",
        "showlegend": False,
    }


def _from_one(index: Any) -> Any:
    """A 0-based run or repetition index as people count it (from 1)."""
    return index + 1 if isinstance(index, int | float) and not isinstance(index, bool) else index


def _funnel(cid: str, tick: str, cps: list[tuple[str, list[Any]]], n: int) -> dict[str, Any]:
    labels, counts, text, colors, custom, where = [], [], [], [], [], []
    for i, (cp, rows) in enumerate(cps, 1):
        optional = not all(bool(r.get("required", True)) for r in rows)
        reached = [r for r in rows if bool(r["reached"])]
        rate = 100 * len(reached) / n if n else math.nan
        turns_at = [num(r.get("reached_at_turn"), math.nan) for r in reached]
        turns_at = [t for t in turns_at if not math.isnan(t)]
        labels.append(f"{i}. {esc(cp)}" + (" (optional)" if optional else ""))
        counts.append(len(reached))
        text.append(f"{len(reached)} of {n} ({pct(rate)})" if n else "0")
        colors.append(class_color(classify(rate)))
        where.append("auto" if reached else "outside")
        custom.append(
            [
                esc(cid),
                esc(cp),
                len(reached),
                n,
                pct(rate),
                f"median turn {median(turns_at):g}" if turns_at else "never reached",
                "optional" if optional else "required",
            ]
        )
    return {
        "type": "funnel",
        "name": esc(cid),
        "y": [[tick] * len(labels), labels],
        "x": counts,
        "text": text,
        "textinfo": "text",
        "textposition": where,
        "marker": {"color": colors},
        "connector": {"fillcolor": "#eaeef2", "line": {"width": 0}},
        "customdata": custom,
        "hovertemplate": (
            "<b>%{customdata[0]}</b> · %{customdata[1]} (%{customdata[6]})<br>"
            "reached by %{customdata[2]} of %{customdata[3]} instances (%{customdata[4]})"
            "<br>%{customdata[5]}<extra></extra>"
        ),
        "showlegend": False,
    }


def turns(data: Any) -> Any:
    """How many user turns instances took, stacked: passed vs not passed.

    `data`: a Run or `run.df`. Not passed = failed, error or timeout (as pass rates count
    them); skipped and cancelled instances are left out.
    """
    df = data.df if isinstance(data, Run) else as_frame(data, "turns", "a Run or run.df")
    need(df, ("case_id", "status", "turns"), "turns", "a Run or run.df")
    df = _ran(df)
    title = "Turns taken"
    if df.empty:
        return empty_figure(title, "No instance ran to a verdict: no turns to show.")
    groups: dict[bool, dict[int, list[str]]] = {True: {}, False: {}}
    for cid, status, n in zip(df["case_id"], df["status"], df["turns"], strict=True):
        groups[str(status) == "passed"].setdefault(int(num(n, 0)), []).append(str(cid))
    xs = sorted({*groups[True], *groups[False]})
    traces = []
    for ok, name, color in (
        (True, "passed", STATUS_COLORS["passed"]),
        (False, "not passed (failed, error, timeout)", STATUS_COLORS["failed"]),
    ):
        counts = [len(groups[ok].get(x, [])) for x in xs]
        traces.append(
            {
                "type": "bar",
                "name": name,
                "x": xs,
                "y": counts,
                "marker": {"color": color},
                "customdata": [[list_cases(sorted(set(groups[ok].get(x, []))))] for x in xs],
                "hovertemplate": (
                    "%{y} instance(s) " + name.split(" (")[0] + " after %{x} turn(s)"
                    "<br>cases:<br>%{customdata[0]}<extra></extra>"
                ),
            }
        )
    parts = []
    for ok, word in ((True, "passed"), (False, "not passed")):
        flat = [x for x, ids in groups[ok].items() for _ in ids]
        if flat:
            mid = median(flat)
            parts.append(f"{word}: {len(flat)}, median {mid:g} turn{'s' if mid != 1 else ''}")
    layout = base_layout(f"{title} — {len(df)} instances", "; ".join(parts))
    span = xs[-1] - xs[0] if xs else 0
    layout.update(
        barmode="stack",
        bargap=0.2,
        xaxis={
            "title": {"text": "user turns taken (per instance)"},
            "dtick": 1 if span <= 30 else None,
            "tickmode": "linear" if span <= 30 else "auto",
            # at least 6 slots wide, so one or two bars do not fill the whole plot
            "range": [xs[0] - 0.5, max(xs[-1] + 0.5, xs[0] + 5.5)],
        },
        yaxis={"title": {"text": "instances"}, "rangemode": "tozero"},
    )
    return new_figure(traces, layout, 300)
