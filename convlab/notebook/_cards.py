"""A Run at a glance: a summary card as plain text and as escaped HTML.

Case ids, agent descriptions and error messages come from files and agents: untrusted text,
so everything that reaches HTML goes through html.escape.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from convlab.model.results import Run

__all__ = ["run_html", "run_text", "worst_cases"]

_WORST = 5


def _short(text: str, limit: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{float(value):.1f}%"


def _views(run: Run) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The instance frame, the stability table and the summary, each computed once."""
    from convlab.results import instances_frame, suite_order
    from convlab.stats import stability, summary

    df = instances_frame(run)
    stab = stability(df, order=suite_order(run))
    return df, stab, summary(df, stab)


def worst_cases(
    df: pd.DataFrame, stab: pd.DataFrame, limit: int = _WORST
) -> list[tuple[str, float, str, str]]:
    """(case id, pass rate, class, first reason it failed) of the lowest-passing cases."""
    bad = stab[(stab["runs"] > 0) & (stab["pass_rate"] < 100)]
    bad = bad.sort_values("pass_rate", kind="stable").head(limit)
    failed = df[df["error"] != ""].drop_duplicates("case_id")
    reasons = dict(zip(failed["case_id"], failed["error"], strict=True))
    return [
        (
            str(r["case_id"]),
            float(r["pass_rate"]),
            str(r["classification"]),
            str(reasons.get(r["case_id"], "")),
        )
        for r in bad.to_dict("records")
    ]


def _counts_line(s: dict[str, Any]) -> str:
    parts = [f"{s['passed']} passed", f"{s['failed']} failed", f"{s['errors']} errors"]
    parts += [f"{s[k]} {k}" for k in ("timeouts", "skipped", "blocked", "cancelled") if s[k]]
    return f"{s['total']} instances: " + ", ".join(parts)


def _rate_line(s: dict[str, Any]) -> str:
    errors = "errors count as failed" if s["count_errors_as"] == "failed" else "errors left out"
    return (
        f"pass rate {_pct(s['pass_rate'])} (mean over {s['cases']} cases; {errors}; "
        f"skipped not counted) · {s['stable_cases']} stable, {s['unstable_cases']} not stable"
        + (f", {s['flaky_cases']} flaky" if s["flaky_cases"] else "")
    )


def _title(run: Run) -> str:
    name = (run.suite.name or run.suite.id) if run.suite else ""
    bits = [f"Run {run.id}" if run.id else "Run", f"suite {name}" if name else ""]
    bits += [f"agent {_short(run.agent, 60)}" if run.agent else "", run.status]
    return " · ".join(b for b in bits if b)


def run_text(run: Run) -> str:
    """A few lines: title, counts, pass rate, the worst cases with their first error."""
    df, stab, s = _views(run)
    lines = [_title(run), "  " + _counts_line(s), "  " + _rate_line(s)]
    worst = worst_cases(df, stab)
    if worst:
        lines.append("  worst cases:")
        for cid, rate, cls, why in worst:
            lines.append(f"    {cid}  {_pct(rate)} {cls}" + (f"  {_short(why)}" if why else ""))
    return "\n".join(lines)


def run_html(run: Run) -> str:
    """The same card as escaped HTML (safe for any case id, agent or error text)."""
    e = html.escape
    df, stab, s = _views(run)
    rows = "".join(
        f"<tr><td><code>{e(cid)}</code></td><td>{e(_pct(rate))}</td><td>{e(cls)}</td>"
        f"<td>{e(_short(why, 200))}</td></tr>"
        for cid, rate, cls, why in worst_cases(df, stab)
    )
    table = (
        "<table><thead><tr><th>worst cases</th><th>pass rate</th><th>class</th>"
        f"<th>why</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else ""
    )
    return (
        f"<div class='convlab-run'><b>{e(_title(run))}</b>"
        f"<div>{e(_counts_line(s))}</div><div>{e(_rate_line(s))}</div>{table}</div>"
    )
