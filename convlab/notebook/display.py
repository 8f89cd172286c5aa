"""Readable views of suites and cases: a DataFrame, escaped HTML and plain text.

Agent and file text is untrusted: everything that reaches HTML goes through html.escape.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convlab.model.assertions import Assertion
    from convlab.model.suite import Case, Suite

__all__ = ["assertion_text", "case_html", "case_text", "suite_html", "suite_text"]


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    return "\n".join([head, *(f"  {c.id} [{c.mode}] {c.name or ''}" for c in suite.cases[:50])])


def suite_html(suite: Suite) -> str:
    """An escaped HTML table of the suite's cases."""
    from convlab.results import suite_frame

    df = suite_frame(suite)
    title = f"<b>Suite {html.escape(suite.id)}</b>: {len(suite.cases)} case(s)"
    return title + df.head(200).to_html(index=False, escape=True)
