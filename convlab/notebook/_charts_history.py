"""`cl.history().plot()`: the pass rate and the cost of a suite's runs over time.

Two panels share the time axis: the pass rate (%) on top, the cost (USD) below, one point
per run and one line per agent (`by="agent"`), per experiment variant (`by="variant"`) or
per suite (`by="suite"`), so a line follows one thing tried again, not every agent that ever
ran a suite. A run without a known cost has no point below; when no run has one, the cost
panel says so instead of drawing zeros. Suite names, agents and variant names come from
users and files: every one is escaped.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from convlab._readable import pct
from convlab.notebook._charts_base import (
    as_frame,
    base_layout,
    esc,
    need,
    new_figure,
    num,
    records,
)

__all__ = ["LINES", "history_figure"]

LINES = {
    "agent": "one line per agent",
    "variant": "one line per experiment variant (a run outside one: its agent's)",
    "suite": "one line per suite",
}
"""`plot(by=...)`: what one line of the history chart follows, and how its subtitle says it."""

_NEEDS = ("id", "started_at", "suite", "pass_rate", "cost_usd")
_HINT = "cl.history() (or a filter of it)"
_COLORS = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#1b7c83", "#9a6700", "#57606a")
_PLOT_HEIGHT = 420


def _label(suite: Any, path: Any, clash: bool) -> str:
    name = "" if pd.isna(suite) else str(suite)
    if clash and isinstance(path, str) and path:
        return f"{name} ({path})"
    return name or "(no suite)"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _line_of(row: dict[str, Any], by: str) -> str:
    """What a run's line follows besides its suite: its agent, its variant, or nothing."""
    agent = _text(row.get("agent")) or "(no agent)"
    if by == "variant":
        return _text(row.get("variant")) or agent
    return agent if by == "agent" else ""


def _hover(row: dict[str, Any]) -> str:
    parts = [
        f"<b>run {int(row['id'])}</b> · {esc(row['when'])}",
        f"agent: {esc(row.get('agent') or '')}",
        f"pass rate: {pct(row['pass_rate'])}",
    ]
    cost = num(row.get("cost_usd"), float("nan"))
    parts.append("cost: unknown" if cost != cost else f"cost: ${cost:.4g}")
    for key in ("experiment", "variant", "status"):
        value = row.get(key)
        if isinstance(value, str) and value:
            parts.append(f"{key}: {esc(value)}")
    return "<br>".join(parts)


def history_figure(history: Any, by: str = "agent") -> Any:
    """The pass rate and cost of each run over time, one line per agent (a Plotly figure).

    `history`: the frame `cl.history()` returns, or any filter of it. `by`: what one line
    follows, "agent" (the default), "variant" (an experiment's variants) or "suite".
    """
    if by not in LINES:
        raise ValueError(f"by={by!r}: use one of {', '.join(repr(k) for k in LINES)}")
    df = as_frame(history, "plot", _HINT)
    need(df, _NEEDS, "plot", _HINT)
    if df.empty:
        raise ValueError("no runs to plot: this history frame is empty")
    df = df.sort_values(["started_at", "id"])
    paths = df["suite_path"] if "suite_path" in df.columns else pd.Series([None] * len(df))
    keys = list(zip(df["suite"], paths, strict=True))
    names = {s for s, _ in keys}
    clash = len(set(keys)) > len(names)
    several = len(set(keys)) > 1
    has_cost = df["cost_usd"].notna().any()
    traces: list[dict[str, Any]] = []
    groups: dict[tuple[Any, Any, str], list[dict[str, Any]]] = {}
    for key, row in zip(keys, records(df), strict=True):
        stamp = row["started_at"]
        row["when"] = "" if pd.isna(stamp) else pd.Timestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")
        groups.setdefault((*key, _line_of(row, by)), []).append(row)
    for n, ((suite, path, line), rows) in enumerate(groups.items()):
        color = _COLORS[n % len(_COLORS)]
        where = _label(suite, path, clash) if several or not line else ""
        label = esc(" · ".join(part for part in (line, where) if part))
        x = [r["started_at"] for r in rows]
        hover = [_hover(r) for r in rows]
        common = {
            "type": "scatter",
            "mode": "lines+markers",
            "x": x,
            "legendgroup": label,
            "hovertext": hover,
            "hoverinfo": "text",
            "line": {"color": color, "width": 1.5},
            "marker": {"color": color, "size": 8},
        }
        rates = [num(r["pass_rate"], float("nan")) for r in rows]
        traces.append({**common, "name": label, "y": rates, "yaxis": "y"})
        if has_cost:
            costs = [num(r["cost_usd"], float("nan")) for r in rows]
            traces.append({**common, "name": label, "y": costs, "yaxis": "y2", "showlegend": False})
    title = f"History: pass rate and cost over time — {len(df)} run{'s' if len(df) != 1 else ''}"
    suites = len(set(keys))
    what = f"{suites} suite{'s' if suites != 1 else ''}; one point per run; {LINES[by]}"
    if not has_cost:
        what += "; no run has a known cost"
    layout = base_layout(title, what)
    layout.update(
        xaxis={"type": "date", "anchor": "y2", "title": {"text": "started"}},
        yaxis={
            "domain": [0.45, 1.0] if has_cost else [0.0, 1.0],
            "range": [-3, 103],
            "ticksuffix": "%",
            "title": {"text": "pass rate"},
        },
    )
    if has_cost:
        layout["yaxis2"] = {
            "domain": [0.0, 0.35],
            "rangemode": "tozero",
            "tickprefix": "$",
            "title": {"text": "cost (USD)"},
        }
    else:
        layout["xaxis"]["anchor"] = "y"
    return new_figure(traces, layout, _PLOT_HEIGHT)
