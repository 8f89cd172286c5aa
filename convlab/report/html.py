"""`run.save("report.html")`: one standalone page for a run, made without a kernel.

The page holds what a notebook report shows (summary card, case and instance tables, charts,
the instances that did not pass) and opens from `file://` with no network: plotly.min.js and
the DataTables bundle are inlined once each, nothing is fetched. Everything shown comes from
the notebook view layer (cards, tables, figures), so the page and a notebook report agree.

Case ids, inputs, replies, tool arguments and errors are untrusted text (an agent can answer
`<script>`): every value is escaped before it reaches the page; the only markup is ours.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlab._readable import cut_noted, visible
from convlab.analysis.io import register_saver, write_atomic
from convlab.htmlkit import location_html, traceback_html

if TYPE_CHECKING:
    from convlab.model.records import AssertionResult, CaseResult, Observation
    from convlab.model.run import Run

__all__ = ["Failures", "failures_html", "run_html_report"]

FAILURES_SHOWN = 20
"""Instances shown in detail; the instance table lists every one of them."""
_TEXT_LIMIT = 4_000


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _value(value: Any, limit: int = 600) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return cut_noted(text, limit)


def _check_html(a: AssertionResult) -> str:
    from convlab.htmlkit import GLYPHS, STATUS_CSS, css_color

    color = STATUS_CSS.get(a.status, css_color("muted"))
    name = a.label or a.id or a.kind
    why = a.error or a.message
    head = (
        f'<div class="cl-check"><span class="cl-mark" style="color:{color}">'
        f"{_e(GLYPHS.get(a.status, '?'))}</span><code>{_e(name)}</code>"
        + (f" {_e(why)}{location_html(a.error_info)}" if why else "")
        + "</div>"
    )
    if a.status == "passed":
        return head
    return head + (
        f'<div class="cl-why cl-kv"><span>expected</span><code>{_e(_value(a.expected))}</code>'
        f"<span>actual</span><code>{_e(_value(a.actual))}</code></div>"
    )


def _reply_html(obs: Observation) -> str:
    parts = []
    for call in obs.tool_calls:
        args = _e(_value(call.arguments))
        result = (
            ""
            if call.result is None
            else f"<span>result</span><code>{_e(_value(call.result))}</code>"
        )
        parts.append(
            f'<div class="cl-tool"><span class="cl-tool-name">{_e(call.name)}</span>'
            f'<div class="cl-kv"><span>arguments</span><code>{args}</code>{result}</div></div>'
        )
    text = obs.text
    if text is None and obs.data is not None:
        text = _value(obs.data, _TEXT_LIMIT)
    body = _e(cut_noted(text, _TEXT_LIMIT)) if text else '<span class="cl-empty">(no text)</span>'
    error = f'<div class="cl-fail">error: {_e(obs.error)}</div>' if obs.error else ""
    return (
        f'<div class="cl-msg"><div class="cl-role">agent</div>{"".join(parts)}'
        f'<div class="cl-bubble">{body}</div>{error}</div>'
    )


def instance_html(r: CaseResult) -> str:
    """One instance as a conversation: user turns, replies, tool calls and failed checks."""
    from convlab.htmlkit import STATUS_CSS, css_color
    from convlab.model.records import variant_label

    color = STATUS_CSS.get(r.status, css_color("muted"))
    variant = variant_label(r.variant)
    title = (
        f"<code>{_e(r.case_id)}</code>"
        + (f" [{_e(variant)}]" if variant else "")
        + f" run {r.run + 1}{f' rep {r.repetition + 1}' if r.repetition else ''} · "
        f'<span style="color:{color}">{_e(r.status)}</span>'
        + (
            f' · <span class="cl-blame cl-blame-{_e(r.blame)}">blame: {_e(r.blame)}</span>'
            if r.blame
            else ""
        )
        + (f" · {_e(cut_noted(r.error, 200))}{location_html(r.error_info)}" if r.error else "")
    )
    turns = []
    for t in r.turns:
        msgs = "".join(
            f'<div class="cl-msg cl-user"><div class="cl-role">{_e(m.role)}</div>'
            f'<div class="cl-bubble">{_e(cut_noted(m.text(), _TEXT_LIMIT))}</div></div>'
            for m in t.messages
        )
        reply = _reply_html(t.observation) if t.observation is not None else ""
        checks = "".join(_check_html(a) for a in t.assertions)
        where = location_html(t.error_info)
        error = f'<div class="cl-fail">{_e(t.error)}{where}</div>' if t.error else ""
        label = f"turn {t.index + 1}" + (f" · {_e(t.step_id)}" if t.step_id else "")
        turns.append(
            f'<div class="cl-turn"><div class="cl-turn-h">{label}</div>{msgs}{reply}'
            f"{f'<div class=cl-checks>{checks}</div>' if checks else ''}{error}</div>"
        )
    case_checks = "".join(_check_html(a) for a in r.assertions)
    cps = "".join(
        f'<div class="cl-check"><code>checkpoint {_e(c.id)}</code> '
        + (
            f"reached at turn {c.reached_at_turn}"
            if c.passed
            else '<span class="cl-fail">not reached</span>'
            + (f" {_e(c.message)}" if c.message else "")
        )
        + ("" if c.required else " (optional)")
        + "</div>"
        for c in r.checkpoints
    )
    tail = case_checks + cps
    tail += traceback_html(r.error_info, open_=True) if r.status != "passed" else ""
    return (
        f'<details class="cl-fail-item" open><summary>{title}</summary>{"".join(turns)}'
        f"{f'<div class=cl-checks>{tail}</div>' if tail else ''}</details>"
    )


def failures_html(run: Run, limit: int = FAILURES_SHOWN) -> str:
    """The first `limit` instances that did not pass, each as a conversation."""
    from convlab.htmlkit import style_tag

    bad = [r for r in run.results if r.status != "passed"]
    if not bad:
        return '<div class="convlab"><p>Every instance passed.</p></div>'
    more = f"<p>The first {limit} of {len(bad)} are shown.</p>" if len(bad) > limit else ""
    items = "".join(instance_html(r) for r in bad[:limit])
    return f'{style_tag()}<div class="convlab">{more}{items}</div>'


class Failures:
    """The instances of a run that did not pass, for a report notebook cell."""

    def __init__(self, run: Run, limit: int = FAILURES_SHOWN) -> None:
        self.run, self.limit = run, limit

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        bad = [r for r in self.run.results if r.status != "passed"]
        lines = [f"{len(bad)} instance(s) did not pass"]
        lines += [
            f"  {r.case_id} run {r.run + 1}: {r.status} {r.error or ''}" for r in bad[: self.limit]
        ]
        text = visible("\n".join(lines))
        return {"text/plain": text, "text/html": failures_html(self.run, self.limit)}


def _charts(run: Run) -> list[Any]:
    """The figures that say something about this run (checkpoints/turns only when present)."""
    plot = run.plot
    figures = [plot.pass_rates(), plot.stability(), plot.durations()]
    if any(r.checkpoints for r in run.results):
        figures.append(plot.checkpoints())
    if any(len(r.turns) > 1 for r in run.results):
        figures.append(plot.turns())
    return figures


def _title(run: Run) -> str:
    suite = (run.suite.name or run.suite.id) if run.suite else ""
    return (
        "convlab report"
        + (f": {suite}" if suite else "")
        + (f" · {run.agent}" if run.agent else "")
    )


def run_html_report(run: Run) -> str:
    """A standalone offline HTML page for `run` (no kernel, no network)."""
    from convlab.htmlkit import PAGE_BODY_CSS, one_style
    from convlab.notebook.display import run_html
    from convlab.notebook.tables import bundle_html, run_table
    from convlab.report.notebook import plotly_script, without_itables_links
    from convlab.report.why import why_html

    meta = [run.status, f"started {run.started_at}" if run.started_at else ""]
    meta += [f"run {run.id}" if run.id else ""]
    sections = [
        f"<h1>{_e(_title(run))}</h1>",
        f'<div class="cl-meta">{_e(" · ".join(m for m in meta if m))}</div>',
        run_html(run),
        "<h2>Cases</h2>",
        run_table(run, "cases").to_html(bundle=False),
        "<h2>Instances</h2>",
        run_table(run, "instances").to_html(bundle=False),
        "<h2>Charts</h2>",
        *(str(fig._repr_mimebundle_()["text/html"]) for fig in _charts(run)),
        why_html(run),
        "<h2>Instances that did not pass</h2>",
        failures_html(run),
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f"<title>{_e(_title(run))}</title>\n<style>{PAGE_BODY_CSS}</style>\n"
        f"{plotly_script()}\n</head>\n<body>\n{bundle_html()}\n"
        f'<main class="convlab">\n'
        + without_itables_links("\n".join(sections))
        + "\n</main>\n</body>\n</html>\n"
    )
    return one_style(page)


@register_saver(".html", ".htm")
def _save_html(run: Run, path: Path) -> None:
    write_atomic(path, run_html_report(run))
