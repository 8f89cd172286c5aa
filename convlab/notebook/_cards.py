"""A Run at a glance: a summary card as plain text and as escaped HTML.

Case ids, agent descriptions and error messages come from files and agents: untrusted text,
so everything that reaches HTML goes through html.escape. Every figure on the card comes from
`Run.summary` (one summary, so two views never disagree).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convlab._readable import pct, shorten, visible
from convlab.analysis.frames import cost_line
from convlab.htmlkit import GLYPHS, STATUS_CSS, style_tag

if TYPE_CHECKING:
    from convlab.model.run import Run

__all__ = ["run_card", "run_html", "run_text", "summary_html", "summary_text"]

_WORST = 5
# summary key -> status name, in the order a reader scans them
_COUNTS = (
    ("passed", "passed"),
    ("failed", "failed"),
    ("errors", "error"),
    ("timeouts", "timeout"),
    ("skipped", "skipped"),
    ("blocked", "blocked"),
    ("cancelled", "cancelled"),
)


Worst = list[tuple[str, float, str, str, str, str]]
"""(case id, pass rate, stability, verdict, why: for a flaky case the fork that decides it
(`run.why`), else the first reason the agent did not pass; where the user's code raised the
exception behind it ('' when none did))"""


def _views(run: Run) -> tuple[dict[str, Any], Worst]:
    """The summary and the worst cases, from the run's one roll-up (kept with a finished
    run: convlab.analysis.frames.run_rollup); a flaky case's why is the fork that decides it."""
    from convlab.analysis.divergence import case_trees
    from convlab.analysis.frames import run_rollup
    from convlab.analysis.why import case_why

    rollup = run_rollup(run)
    rows = rollup.cases
    bad = [(cid, row) for cid, row in rows.items() if row["runs"] > 0 and row["pass_rate"] < 100]
    bad = sorted(bad, key=lambda item: item[1]["pass_rate"])[:_WORST]  # stable: suite order
    reasons = dict(rollup.reasons)
    flaky = [cid for cid, row in bad if row["flaky"]]
    if flaky:  # a flaky case's why is the fork that decides it (convlab.analysis.why)
        mode = str(rollup.summary.get("count_errors_as", "failed"))
        trees = case_trees(run, flaky, mode)
        reasons |= {cid: (case_why(tree), "") for cid, tree in trees.items()}
    worst = [
        (
            cid,
            float(row["pass_rate"]),
            str(row["stability"]),
            str(row["verdict"]),
            *reasons.get(cid, ("", "")),
        )
        for cid, row in bad
    ]
    return dict(rollup.summary), worst


def _counts_line(s: Mapping[str, Any]) -> str:
    parts = [f"{s['passed']} passed", f"{s['failed']} failed", f"{s['errors']} errors"]
    parts += [f"{s[k]} {k}" for k in ("timeouts", "skipped", "blocked", "cancelled") if s.get(k)]
    return f"{s['total']} instances: " + ", ".join(parts)


def _rate_line(s: Mapping[str, Any]) -> str:
    errors = (
        "the agent's errors count as failed"
        if s.get("count_errors_as", "failed") == "failed"
        else "errors left out"
    )
    # thinkingbox's `tb agg` figure: passes / runs with its Jeffreys 95% credible interval
    runs = (
        f" · {pct(s['mean_pass'])} of runs passed (95% CI {pct(s.get('mean_pass_ci_low'))}"
        f" to {pct(s.get('mean_pass_ci_high'))})"
        if s.get("mean_pass") is not None
        else ""
    )
    return (
        f"pass rate {pct(s['pass_rate'])} (mean over {cases_rated(s)} cases; {errors}; "
        f"skipped not counted){stability_roll(s)}" + runs
    )


def stability_roll(s: Mapping[str, Any]) -> str:
    """` · stability: 10 stable, 2 always fails`: the cases by the class the views show; ""
    when every case ran once (one run says nothing about stability)."""
    counts = {w: n for w, n in (s.get("stability") or {}).items() if n and w != "one run"}
    return " · stability: " + ", ".join(f"{n} {w}" for w, n in counts.items()) if counts else ""


def cases_rated(s: Mapping[str, Any]) -> str:
    """`9`, or `4 of 9` when some cases have no run the pass rate counts (blamed elsewhere,
    skipped)."""
    cases, rated = s.get("cases", 0), s.get("rated_cases", s.get("cases", 0))
    return f"{rated} of {cases}" if rated != cases else str(cases)


def blame_line(s: Mapping[str, Any]) -> str:
    """`not passed, by blame: agent 2, judge 1 (...)`; '' when every instance passed."""
    counts = {b: n for b, n in (s.get("blame") or {}).items() if n}
    if not counts:
        return ""
    text = "not passed, by blame: " + ", ".join(f"{b} {n}" for b, n in counts.items())
    if s.get("not_agent"):
        text += " (only the agent's count towards the pass rate)"
    return text


def _title(run: Run) -> str:
    name = (run.suite.name or run.suite.id) if run.suite else ""
    bits = [f"Run {run.id}" if run.id else "Run", f"suite {name}" if name else ""]
    bits += [f"agent {shorten(run.agent, 60)}" if run.agent else "", run.status]
    return " · ".join(b for b in bits if b)


def summary_text(s: Mapping[str, Any]) -> str:
    """The counts, the pass rate and (when something did not pass) the blame breakdown."""
    extra = [line for line in (blame_line(s), cost_line(dict(s))) if line]
    return visible("\n".join([_counts_line(s), _rate_line(s), *extra]))


def run_card(run: Run) -> tuple[str, str]:
    """The card as text and as HTML, from one computation of the frames."""
    views = _views(run)
    return _run_text(run, *views), _run_html(run, *views)


def run_text(run: Run) -> str:
    """A few lines: title, counts, pass rate, the worst cases with their first error."""
    return _run_text(run, *_views(run))


def _run_text(run: Run, s: dict[str, Any], worst: Worst) -> str:
    lines = [_title(run), "  " + _counts_line(s), "  " + _rate_line(s)]
    lines += ["  " + line for line in (blame_line(s), cost_line(s)) if line]
    if worst:
        lines.append("  worst cases:")
        for cid, rate, cls, _, why, at in worst:
            head = f"    {cid}  {pct(rate)} {cls}"
            at = f" (at {at})" if at else ""  # where the user's code raised
            lines.append(head + (f"  {shorten(why, 200)}" if why else "") + at)
    return visible("\n".join(lines))


def _bar(s: Mapping[str, Any]) -> str:
    """A stacked bar of the instances by status (nothing drawn for an empty run)."""
    total = s.get("total") or 0
    if not total:
        return ""
    cells = "".join(
        f"<div title='{s[k]} {name}' style='width:{100 * s[k] / total:.3f}%;"
        f"background:{STATUS_CSS[name]}'></div>"
        for k, name in _COUNTS
        if s.get(k)
    )
    return f"<div class='cl-bar'>{cells}</div>"


def _counts_html(s: Mapping[str, Any]) -> str:
    spans = [f"<span><b>{s['total']}</b> instances</span>"]
    spans += [
        f"<span style='color:{STATUS_CSS[name]}'>{GLYPHS[name]} <b>{s[k]}</b> {k}</span>"
        for k, name in _COUNTS
        if s.get(k) or k in ("passed", "failed", "errors")
    ]
    return f"<div class='cl-counts'>{''.join(spans)}</div>"


def summary_html(s: Mapping[str, Any], title: str = "Summary", extra: str = "") -> str:
    """A card: title, pass rate, a stacked status bar, the counts, the stability roll-up."""
    e = html.escape
    return (
        f"<div class='convlab'>{style_tag()}<div class='cl-card'>"
        f"<div class='cl-title'>{e(title)}</div>"
        f"<div><span class='cl-rate'>{e(pct(s.get('pass_rate')))}</span> "
        f"<span class='cl-muted'>pass rate (mean over {cases_rated(s)} cases)</span></div>"
        f"{_bar(s)}{_counts_html(s)}"
        f"<div class='cl-muted'>{e(_rate_line(s))}</div>"
        + _blame_html(s)
        + (f"<div class='cl-muted'>{e(cost)}</div>" if (cost := cost_line(dict(s))) else "")
        + f"{extra}</div></div>"
    )


def _blame_html(s: Mapping[str, Any]) -> str:
    """The non-passes by blame, the agent's apart from the rest (the pass rate's rule)."""
    counts = {b: n for b, n in (s.get("blame") or {}).items() if n}
    if not counts:
        return ""
    e = html.escape
    spans = "".join(
        f"<span class='cl-blame cl-blame-{e(b)}'><b>{n}</b> {e(b)}</span>"
        for b, n in counts.items()
    )
    note = (
        "<span class='cl-muted'>only the agent's count towards the pass rate</span>"
        if s.get("not_agent")
        else ""
    )
    return f"<div class='cl-counts'><span>not passed, by blame:</span>{spans}{note}</div>"


def _worst_table(worst: Worst) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td><code>{e(cid)}</code></td><td>{e(pct(rate))}</td><td>{e(cls)}</td>"
        f"<td title='{e(why)}'>{e(shorten(why, 200))}"
        + (f" <span class='cl-muted'>at <code>{e(at)}</code></span>" if at else "")
        + "</td></tr>"
        for cid, rate, cls, _, why, at in worst
    )
    if not rows:
        return ""
    return (
        "<table class='cl-small'><thead><tr><th>worst cases</th><th>pass rate</th>"
        f"<th>stability</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def run_html(run: Run) -> str:
    """The run's card as escaped HTML: the summary plus the worst cases and why they failed."""
    return _run_html(run, *_views(run))


def _run_html(run: Run, s: dict[str, Any], worst: Worst) -> str:
    extra = ""
    if run.error:
        extra += f"<div class='cl-fail'>{html.escape(run.error)}</div>"
    extra += _worst_table(worst)
    return summary_html(s, _title(run), extra)
