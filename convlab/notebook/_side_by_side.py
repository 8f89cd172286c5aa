"""A passing and a failing run of one case, side by side, aligned turn by turn.

The two runs are picked from either side of the case's deciding fork
(convlab.analysis.divergence.contrasting_pair). Each turn is a row: what the user said, the
tool calls, the reply and the turn's checks, for the passing run on the left and the failing
one on the right. The turn where their ways part is marked `fork`. What one run did and the
other did not is highlighted, in colour and with an underline (never by colour alone): a tool
call the other run did not make at that turn, the words of a reply the other reply does not
have (a word diff).

Everything shown comes from agents and users: every piece is escaped; colours are the theme's
variables (light and dark); the rules are the HTML kit's (`SIDE_BY_SIDE_CSS`, sent once).
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from convlab._readable import shorten
from convlab.analysis.agent_diff import word_diff
from convlab.analysis.divergence import CaseTree, contrasting_pair
from convlab.htmlkit import GLYPHS, STATUS_CSS, style_tag
from convlab.model.records import CaseResult, TurnResult

if TYPE_CHECKING:
    from convlab.model.run import Run

__all__ = ["side_by_side_html", "side_by_side_text"]

_SAID = 300
_REPLY = 2_000
_ARGS = 160


def _calls(t: TurnResult | None) -> list[tuple[str, str]]:
    """(what the trajectory compares, what a reader sees) per tool call of the turn."""
    if t is None or t.observation is None:
        return []
    out = []
    for c in t.observation.tool_calls:
        args = c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments, default=str)
        keys = sorted(c.arguments) if isinstance(c.arguments, dict) else []
        shown = f"{c.name}({shorten(args, _ARGS)})" + (" failed" if c.error else "")
        out.append((f"{c.name}:{keys}:{bool(c.error)}", shown))
    return out


def _reply(t: TurnResult | None) -> str:
    if t is None or t.observation is None:
        return ""
    return t.observation.text or ""


def _said(t: TurnResult | None) -> str:
    return "" if t is None else "\n".join(m.text() for m in t.messages)


def _reply_html(mine: str, other: str, side: str) -> str:
    e = html.escape
    if not mine:
        return "<div class='cl-reply cl-empty'>(no text)</div>"
    ops = word_diff(mine[:_REPLY], other[:_REPLY])
    keep = "delete"  # words only in `mine` (the diff reads mine -> other)
    parts = [
        f"<span class='cl-only-{side}' title='only in this run'>{e(text)}</span>"
        if op == keep
        else e(text)
        for op, text in ops
        if op in ("equal", keep)
    ]
    return f"<div class='cl-reply'>{''.join(parts)}</div>"


def _checks_html(t: TurnResult | None) -> str:
    if t is None or not t.assertions:
        return ""
    e = html.escape
    marks = " ".join(
        f"<span style='color:{STATUS_CSS.get(a.status, STATUS_CSS['failed'])}'>"
        f"{GLYPHS.get(a.status, '?')} {e(a.label or a.id or a.kind)}</span>"
        for a in t.assertions
    )
    return f"<div class='cl-sxs-checks'>{marks}</div>"


def _cell(t: TurnResult | None, other: TurnResult | None, side: str) -> str:
    e = html.escape
    if t is None:
        return "<span class='cl-empty'>(no such turn: the conversation had ended)</span>"
    theirs = {k for k, _ in _calls(other)}
    calls = "".join(
        f"<div><code class='cl-only-{side}' title='only in this run'>{e(shown)}</code></div>"
        if key not in theirs
        else f"<div><code>{e(shown)}</code></div>"
        for key, shown in _calls(t)
    )
    said = f"<div class='cl-said'><b>user</b> {e(shorten(_said(t), _SAID))}</div>"
    return said + calls + _reply_html(_reply(t), _reply(other), side) + _checks_html(t)


def _outcome(r: CaseResult) -> str:
    e = html.escape
    color = STATUS_CSS.get(r.status, STATUS_CSS["failed"])
    why = f" — {e(shorten(r.error or '', 300))}" if r.error else ""
    return f"<span style='color:{color}'>{GLYPHS.get(r.status, '?')} {e(r.status)}</span>{why}"


def _records(run: Run, keys: set[tuple[str, str, int, int]]) -> dict[Any, CaseResult]:
    from convlab.model.results import Results

    results = run.results
    found = (
        results.mapped(lambda r: r if r.key in keys else None)
        if isinstance(results, Results)
        else [r for r in results if r.key in keys]
    )
    return {r.key: r for r in found if r is not None}


def _pair(run: Run, tree: CaseTree) -> tuple[CaseResult, CaseResult, int | None] | None:
    picked = contrasting_pair(tree)
    if picked is None:
        return None
    ok, bad, fork = picked
    found = _records(run, {ok.key, bad.key})
    return found[ok.key], found[bad.key], fork


def _label(r: CaseResult) -> str:
    variant = f" [{r.key[1]}]" if r.key[1] else ""
    return f"run {r.run + 1}{variant}"


def side_by_side_html(run: Run, tree: CaseTree) -> str:
    """The passing and the failing run as a table (escaped); '' unless the case is flaky."""
    pair = _pair(run, tree)
    if pair is None:
        return ""
    ok, bad, fork = pair
    e = html.escape
    rows = []
    for n in range(max(len(ok.turns), len(bad.turns))):
        a = ok.turns[n] if n < len(ok.turns) else None
        b = bad.turns[n] if n < len(bad.turns) else None
        mark = "<br><span class='cl-forkmark'>fork</span>" if n == fork else ""
        tr = "<tr class='cl-fork'>" if n == fork else "<tr>"
        rows.append(
            f"{tr}<td class='cl-sxs-turn'>turn {n + 1}{mark}"
            f"</td><td>{_cell(a, b, 'ok')}</td><td>{_cell(b, a, 'bad')}</td></tr>"
        )
    outcomes = f"<td>{_outcome(ok)}</td><td>{_outcome(bad)}</td>"
    rows.append(f"<tr><td class='cl-sxs-turn'>outcome</td>{outcomes}</tr>")
    where = f"their ways part at turn {fork + 1}" if fork is not None else "they took one path"
    head = (
        f"<div class='cl-muted'>A passing and a failing run of <code>{e(tree.case_id)}</code> "
        f"side by side ({e(where)}); what one run did and the other did not is underlined.</div>"
    )
    table = (
        "<table class='cl-sxs'><colgroup><col style='width:5.5em'><col><col></colgroup>"
        f"<thead><tr><th></th><th>passed: {e(_label(ok))}</th>"
        f"<th>did not pass: {e(_label(bad))}</th></tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table>"
    )
    return f"<div class='convlab'>{style_tag()}{head}{table}</div>"


def side_by_side_text(run: Run, tree: CaseTree) -> str:
    """The same two runs as plain text, turn by turn (the fork marked); '' unless flaky."""
    from convlab._readable import visible

    pair = _pair(run, tree)
    if pair is None:
        return ""
    ok, bad, fork = pair
    lines = [f"passed: {_label(ok)}  |  did not pass: {_label(bad)}"]
    for n in range(max(len(ok.turns), len(bad.turns))):
        sides = []
        for r in (ok, bad):
            t = r.turns[n] if n < len(r.turns) else None
            calls = ", ".join(shown for _, shown in _calls(t)) or "no tool call"
            sides.append(shorten(f"{calls}; {_reply(t)}", 70) if t else "(ended)")
        mark = "  <- fork" if n == fork else ""
        lines.append(f"turn {n + 1}{mark}: {sides[0]}  |  {sides[1]}")
    return visible("\n".join(lines))
