"""The reprs of model objects: suites, cases, runs, summaries and comparisons.

Model objects keep only thin `_repr_*` hooks that call these functions. A rich bundle is a
compact card plus an interactive table (convlab.notebook.tables), with `text/plain` always.
Agent and file text is untrusted: everything that reaches HTML goes through html.escape.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convlab._readable import shorten, visible
from convlab.htmlkit import style_tag
from convlab.notebook._cards import (
    cases_rated,
    run_card,
    run_html,
    run_text,
    summary_html,
    summary_text,
)

if TYPE_CHECKING:
    from convlab.model.assertions import Assertion
    from convlab.model.run import Run
    from convlab.model.suite import Case, Suite

__all__ = [
    "assertion_text",
    "case_html",
    "case_text",
    "cases_rated",
    "comparison_bundle",
    "experiment_card",
    "run_bundle",
    "run_html",
    "run_text",
    "suite_bundle",
    "suite_html",
    "suite_text",
    "summary_bundle",
]


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return shorten(text, limit)


def assertion_text(a: Assertion) -> str:
    """One line describing an assertion spec."""
    fields = a.model_dump(exclude_defaults=True, exclude={"code"})
    fields.pop("kind", None)
    body = ", ".join(f"{k}={_short(v, 60)}" for k, v in fields.items())
    return f"{'not ' if a.negate else ''}{a.kind}({body})"


def _inputs(case: Case) -> list[tuple[str, str, list[str]]]:
    """(who, text, assertion lines) for each scripted input of a case."""
    out: list[tuple[str, str, list[str]]] = []
    for m in case.input or []:
        out.append((m.role, m.text(), []))
    if out and case.mode == "standard":
        out[-1] = (*out[-1][:2], [assertion_text(a) for a in case.assertions])
    for i, t in enumerate(case.turns):
        label = t.id or f"turn {i + 1}"
        text = t.input.text + (f" [{', '.join(v.id for v in t.variants)}]" if t.variants else "")
        out.append((label, text, [assertion_text(a) for a in t.assertions]))
    return out


def case_text(case: Case) -> str:
    """A plain-text view: header, inputs with their assertions, checkpoints."""
    lines = [f"Case {case.id} ({case.mode})" + (f" - {case.name}" if case.name else "")]
    if case.skip:
        lines.append(f"  skipped: {case.skip}")
    for who, text, checks in _inputs(case):
        lines.append(f"  {who}: {_short(text)}")
        lines += [f"    ✓ {c}" for c in checks]
    if case.mode != "standard":
        lines += [f"  final: {assertion_text(a)}" for a in case.assertions]
    for cp in case.checkpoints:
        after = f" after {', '.join(cp.after)}" if cp.after else ""
        what = assertion_text(cp.assertion) if cp.assertion else "(no assertion)"
        lines.append(
            f"  checkpoint {cp.id}{after}: {what}" + ("" if cp.required else " (optional)")
        )
    if case.source:
        lines.append(f"  source: {case.source}")
    return "\n".join(lines)


def case_html(case: Case) -> str:
    """An escaped HTML view of one case."""
    e = html.escape
    rows = []
    for who, text, checks in _inputs(case):
        items = "".join(f"<li><code>{e(c)}</code></li>" for c in checks)
        rows.append(
            f"<tr><td><b>{e(who)}</b></td><td>{e(_short(text, 300))}"
            f"{f'<ul>{items}</ul>' if items else ''}</td></tr>"
        )
    extra = (
        [e(f"final: {assertion_text(a)}") for a in case.assertions]
        if case.mode != "standard"
        else []
    )
    extra += [
        e(f"checkpoint {cp.id}: {assertion_text(cp.assertion) if cp.assertion else '-'}")
        for cp in case.checkpoints
    ]
    foot = "".join(f"<div><code>{x}</code></div>" for x in extra)
    title = e(case.id) + (f" — {e(case.name)}" if case.name else "")
    src = f"<div><small>{e(str(case.source))}</small></div>" if case.source else ""
    return (
        f"<div class='convlab-case'><b>{title}</b> <i>({e(case.mode)})</i>"
        f"<table>{''.join(rows)}</table>{foot}{src}</div>"
    )


def suite_text(suite: Suite) -> str:
    """A plain-text summary of a suite."""
    head = f"Suite {suite.id}: {len(suite.cases)} case(s)"
    lines = [head, *(f"  {c.id} [{c.mode}] {c.name or ''}" for c in suite.cases[:50])]
    return visible("\n".join(lines))


def _suite_card(suite: Suite) -> str:
    e = html.escape
    modes: dict[str, int] = {}
    for c in suite.cases:
        modes[c.mode] = modes.get(c.mode, 0) + 1
    kinds = ", ".join(f"{n} {m}" for m, n in modes.items())
    files = sorted({str(c.source.file) for c in suite.cases if c.source and c.source.file})
    where = f"{len(files)} file(s)" if len(files) > 1 else (files[0] if files else "")
    title = f"Suite {suite.name or suite.id}"
    return (
        f"<div class='convlab'>{style_tag()}<div class='cl-card'>"
        f"<div class='cl-title'>{e(title)}</div>"
        f"<div><b>{len(suite.cases)}</b> case(s): {e(kinds)}</div>"
        + (f"<div class='cl-muted'>{e(where)}</div>" if where else "")
        + "</div></div>"
    )


def suite_html(suite: Suite) -> str:
    """The suite's card and an interactive table of its cases (a notebook output: the table
    carries the DataTables bundle only where it is the page's carrier)."""
    from convlab.notebook.tables import suite_table

    return _suite_card(suite) + suite_table(suite).after_card_html()


def suite_bundle(suite: Suite) -> dict[str, Any]:
    """`Suite` in a notebook: the card and the interactive case table."""
    return {"text/plain": suite_text(suite), "text/html": suite_html(suite)}


def run_bundle(run: Run) -> dict[str, Any]:
    """`Run` in a notebook: the summary card, then per-case (several runs) or per-instance
    rows as an interactive table."""
    from convlab.notebook.progress import fold_live_view
    from convlab.notebook.tables import run_table

    fold_live_view(run.id)  # a cell that ran it and shows it: the card once, here
    runs = int(run.settings.get("runs", 1) or 1)
    table = run_table(run, "cases" if runs > 1 else "instances", worst=True)
    text, card = run_card(run)
    return {"text/plain": text, "text/html": card + table.after_card_html()}


def summary_bundle(summary: Mapping[str, Any]) -> dict[str, Any]:
    """`Run.summary` in a notebook: the card (the dict itself stays a plain dict)."""
    return {
        "text/plain": summary_text(summary),
        "text/html": summary_html(summary),
        "application/json": dict(summary),
    }


def comparison_bundle(comparison: Any) -> dict[str, Any]:
    """`cl.compare(a, b)` in a notebook: the paragraph, then the change table."""
    from convlab.notebook._experiment_view import changes_html
    from convlab.notebook.tables import compare_table

    # the table's description is the paragraph: the card is the table itself
    text = visible(f"{comparison.summary}\n\n{comparison.to_string(max_rows=40)}")
    changes = changes_html(comparison.attrs.get("agent_changes") or [], "before", "after")
    if changes:
        changes = (
            f"<div class='convlab'>{style_tag()}<div class='cl-title'>What "
            f"changed in the agent</div>{changes}</div>"
        )
    table = compare_table(comparison)._repr_html_()
    return {"text/plain": text, "text/html": table + changes}


def experiment_card(exp: Any) -> tuple[str, str]:
    """An experiment as text and as HTML: heading, leaderboard, what changed in the agent."""
    from convlab.notebook._experiment_view import experiment_card as card

    return card(exp)
