"""The before/after chart of `convlab.compare(a, b)` (`Comparison.plot()`).

A dumbbell per case: a hollow dot for the before pass rate, a filled marker for the after
one, joined by a line. What matters most is told three ways (colour, marker and legend, and
a bold case id): changes beyond noise, red for worse and green for better, at the top. Cases
in one run only keep a row with a single marker of their own, so none silently disappears.
"""

from __future__ import annotations

import math
from typing import Any

from convlab._readable import pct
from convlab.notebook._charts_base import (
    TOP_AXIS_AT,
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

__all__ = ["GROUPS", "compare_figure"]

_NEEDS = (
    "case_id",
    "presence",
    "change",
    "beyond_noise",
    "pass_rate_before",
    "pass_rate_after",
)
_HINT = "convlab.compare(before, after) (a Comparison)"

GROUPS: dict[str, tuple[str, str, str, int]] = {
    # key: (legend name, colour, marker symbol, marker size); in row order, worst first
    "worse_noise": ("worse, beyond noise", "#cf222e", "triangle-left", 13),
    "better_noise": ("better, beyond noise", "#1a7f37", "triangle-right", 13),
    "within": ("changed within noise", "#6e7781", "circle", 11),
    "same": ("no change", "#afb8c1", "circle", 8),
    "after_only": ("only in the after run", "#0969da", "star", 12),
    "before_only": ("only in the before run", "#8c959f", "x", 10),
}
"""How each kind of row is drawn (colour + marker + legend entry)."""
_BEFORE = "#57606a"


def _group(row: dict[str, Any]) -> str:
    presence, change = str(row["presence"]), str(row["change"])
    if presence in ("after_only", "before_only"):
        return presence
    if change in ("worse", "better"):
        return f"{change}_noise" if bool(row["beyond_noise"]) else "within"
    return "same"


def _sort_key(item: tuple[int, dict[str, Any]]) -> tuple[int, float, int]:
    i, row = item
    delta = num(row.get("delta_pp"), 0.0)
    return (list(GROUPS).index(row["_group"]), delta if delta < 0 else -delta, i)


def _direction(before: float, after: float, symbol: str) -> str:
    """Triangles point the way the pass rate moved (left = worse), for every changed row."""
    if symbol != "circle" or math.isnan(before) or before == after:
        return symbol
    return "triangle-left" if after < before else "triangle-right"


def _side(row: dict[str, Any], side: str) -> str:
    rate = row[f"pass_rate_{side}"]
    runs, passed = row.get(f"runs_{side}"), row.get(f"passed_{side}")
    if runs is None or (isinstance(runs, float) and math.isnan(runs)) or not runs:
        return pct(rate) if not math.isnan(num(rate, math.nan)) else "not run"
    return f"{pct(rate)} ({int(num(passed, 0))}/{int(runs)} passed)"


def _hover(row: dict[str, Any], alpha: float) -> list[str]:
    p = num(row.get("p_value"), math.nan)
    if str(row["presence"]) != "both":
        verdict = GROUPS[row["_group"]][0]
    elif math.isnan(p):
        verdict = "no test (a side has no runs)"
    else:
        noise = "beyond noise" if bool(row["beyond_noise"]) else "within noise"
        verdict = f"{noise} (Fisher p = {p:.2g}, alpha {alpha:g})"
    delta = num(row.get("delta_pp"), math.nan)
    change = "" if math.isnan(delta) else f"{delta:+.1f} pp"
    return [
        esc(row["case_id"]),
        _side(row, "before"),
        _side(row, "after"),
        change,
        verdict,
        esc(row.get("status_before", "") or "-"),
        esc(row.get("status_after", "") or "-"),
    ]


_HOVER = (
    "<b>%{customdata[0]}</b><br>before: %{customdata[1]}<br>after: %{customdata[2]}"
    "<br>change: %{customdata[3]} — %{customdata[4]}<br>"
    "<span style='color:#57606a'>statuses before: %{customdata[5]}<br>"
    "statuses after: %{customdata[6]}</span>"
    "<extra></extra>"
)


def compare_figure(comparison: Any) -> Any:
    """Before vs after pass rate per case, changes beyond noise marked and listed first.

    `comparison`: the frame `convlab.compare(before, after)` returns (any frame with its
    columns `case_id`, `presence`, `change`, `beyond_noise`, `pass_rate_before`,
    `pass_rate_after`).
    """
    df = as_frame(comparison, "compare_figure", _HINT)
    need(df, _NEEDS, "compare_figure", _HINT)
    alpha = float(df.attrs.get("alpha", 0.05))
    tagged = [{**r, "_group": _group(r)} for r in records(df)]
    rows = [r for _, r in sorted(enumerate(tagged), key=_sort_key)]
    cats = [esc(r["case_id"]) for r in rows]
    traces: list[dict[str, Any]] = []
    if any(r["presence"] == "both" for r in rows):
        traces.append(  # the legend's key for the hollow "before" dots
            {
                "type": "scatter",
                "mode": "markers",
                "name": "before",
                "x": [None],
                "y": [None],
                "marker": {"color": "white", "size": 9, "line": {"color": _BEFORE, "width": 1.5}},
                "legendgroup": "before",
                "hoverinfo": "skip",
            }
        )
    for key, (name, color, symbol, size) in GROUPS.items():
        group = [(c, r) for c, r in zip(cats, rows, strict=True) if r["_group"] == key]
        if group:
            traces += _group_traces(key, name, color, symbol, size, group, alpha)
    n = len(rows)
    counts = {k: sum(r["_group"] == k for r in rows) for k in GROUPS}
    summary = " · ".join(f"{c} {GROUPS[k][0]}" for k, c in counts.items() if c)
    layout = base_layout(
        f"Before → after: pass rate per case — {n} case{'s' if n != 1 else ''}",
        f"{summary or 'no cases'}; Fisher's exact test, alpha {alpha:g}; "
        "hollow dot = before, marker = after" + _agent_note(df.attrs.get("agent_changes")),
    )
    ticks = []
    for r in rows:
        tick = short(r["case_id"])
        if r["_group"] in ("worse_noise", "better_noise"):
            tick = f"<b>{tick}</b>"
        elif r["_group"] in ("after_only", "before_only"):
            tick += " <span style='color:#8c959f'>(" + GROUPS[r["_group"]][0] + ")</span>"
        ticks.append(tick)
    layout.update(
        yaxis={**axis_for_cases(cats, ticks), "showgrid": True, "gridcolor": "#f3f4f6"},
        xaxis={
            "range": [-3, 103],
            "ticksuffix": "%",
            "dtick": 10,
            "title": {"text": "pass rate (% of runs passed)"},
            "side": "top" if n > TOP_AXIS_AT else "bottom",
            "zeroline": False,
        },
    )
    return new_figure(traces, layout, row_height(n) * max(n, 2), top_axis=n > TOP_AXIS_AT)


def _agent_note(changes: Any) -> str:
    """`; agent changed: model a → b; system: 3 word(s) removed, 5 added` (escaped, capped)."""
    if not changes:
        return ""
    from convlab.analysis.agent_diff import change_text

    texts = [short(change_text(c), 60) for c in changes[:4]]
    more = f"; and {len(changes) - 4} more" if len(changes) > 4 else ""
    return "; agent changed: " + "; ".join(texts) + more


def _group_traces(
    key: str,
    name: str,
    color: str,
    symbol: str,
    size: int,
    group: list[tuple[str, dict[str, Any]]],
    alpha: float,
) -> list[dict[str, Any]]:
    """Connectors, before dots and after markers of one kind of row."""
    before = [num(r["pass_rate_before"], math.nan) for _, r in group]
    after = [num(r["pass_rate_after"], math.nan) for _, r in group]
    ys = [c for c, _ in group]
    custom = [_hover(r, alpha) for _, r in group]
    out: list[dict[str, Any]] = []
    line_x: list[float | None] = []
    line_y: list[str | None] = []
    for b, a, y in zip(before, after, ys, strict=True):
        if not (math.isnan(b) or math.isnan(a)) and b != a:
            line_x += [b, a, None]
            line_y += [y, y, None]
    if line_x:
        wide = key in ("worse_noise", "better_noise")
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": line_x,
                "y": line_y,
                "line": {"color": color, "width": 3 if wide else 1.5},
                "hoverinfo": "skip",
                "showlegend": False,
                "legendgroup": key,
            }
        )
    shown = [i for i, b in enumerate(before) if not math.isnan(b)]
    if key != "after_only" and shown:
        solo = key == "before_only"
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": name if solo else "before",
                "x": [before[i] for i in shown],
                "y": [ys[i] for i in shown],
                "marker": {
                    "color": color if solo else "white",
                    "symbol": symbol if solo else "circle",
                    "size": size if solo else 9,
                    "line": {"color": color if solo else _BEFORE, "width": 2 if solo else 1.5},
                },
                "customdata": [custom[i] for i in shown],
                "hovertemplate": _HOVER,
                "legendgroup": key if solo else "before",
                "showlegend": solo,
            }
        )
    shown = [i for i, a in enumerate(after) if not math.isnan(a)]
    if key != "before_only" and shown:
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": name,
                "x": [after[i] for i in shown],
                "y": [ys[i] for i in shown],
                "marker": {
                    "color": color,
                    "symbol": [_direction(before[i], after[i], symbol) for i in shown],
                    "size": size,
                    "line": {"color": "white", "width": 0.5},
                },
                "customdata": [custom[i] for i in shown],
                "hovertemplate": _HOVER,
                "legendgroup": key,
            }
        )
    return out
