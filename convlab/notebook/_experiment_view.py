"""An experiment in a notebook: its card, the leaderboard and matrix tables, and what changed
in the agent (settings side by side, a system prompt as a word diff).

Variant names, agent descriptions, settings and prompts are untrusted text (a prompt may hold
`<script>`): every piece is escaped before it is marked up; the only markup is ours.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from convlab._readable import pct, shorten, visible
from convlab.analysis.agent_diff import (
    NOT_SET,
    PROMPT_KEYS,
    change_text,
    word_diff_counts,
    word_diff_shown,
)
from convlab.htmlkit import style_tag
from convlab.model.experiment import VARIANT_COLUMN
from convlab.notebook.tables import Table

if TYPE_CHECKING:
    from convlab.analysis.leaderboard import Leaderboard
    from convlab.model.experiment import Experiment

__all__ = [
    "changes_html",
    "changes_lines",
    "experiment_bundle",
    "experiment_card",
    "experiment_text",
    "leaderboard_bundle",
    "leaderboard_table",
    "matrix_table",
    "prompt_diff_html",
]

_VALUE_LIMIT = 200


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _value(value: Any) -> str:
    if value is NOT_SET:
        return str(value)
    text: str = (
        value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    )
    return shorten(text, _VALUE_LIMIT)


def _is_prompt(row: Mapping[str, Any]) -> bool:
    name = str(row["setting"]).rsplit(".", 1)[-1]
    return name in PROMPT_KEYS and isinstance(row["before"], str) and isinstance(row["after"], str)


def prompt_diff_html(before: str | None, after: str | None) -> str:
    """`after` against `before` word by word: removed words struck out (`<del>`), added ones
    underlined in green (`<ins>`); every word escaped."""
    tags = {"delete": "del", "insert": "ins"}
    parts = [
        _e(text) if op == "equal" else f"<{tags[op]}>{_e(text)}</{tags[op]}>"
        for op, text in word_diff_shown(before, after)
    ]
    return f"<div class='cl-diff'>{''.join(parts)}</div>"


def changes_html(rows: Sequence[Mapping[str, Any]], before: str, after: str) -> str:
    """The settings that differ between two agents (`before`, `after` name their columns); a
    prompt as a word diff. '' when nothing differs."""
    if not rows:
        return ""
    plain = [r for r in rows if not _is_prompt(r)]
    table = ""
    if plain:
        body = "".join(
            f"<tr><td><code>{_e(r['setting'])}</code></td><td>{_e(_value(r['before']))}</td>"
            f"<td>{_e(_value(r['after']))}</td></tr>"
            for r in plain
        )
        table = (
            f"<table class='cl-small'><thead><tr><th>setting</th><th>{_e(before)}</th>"
            f"<th>{_e(after)}</th></tr></thead><tbody>{body}</tbody></table>"
        )
    prompts = ""
    for r in rows:
        if _is_prompt(r):
            removed, added = word_diff_counts(r["before"], r["after"])
            prompts += (
                f"<div class='cl-muted'><code>{_e(r['setting'])}</code>: {removed} word(s) "
                f"removed, {added} added ({_e(before)} → {_e(after)})</div>"
                + prompt_diff_html(r["before"], r["after"])
            )
    return table + prompts


def changes_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each changed setting in words (`params.temperature 0.2 → 0.7`)."""
    return [change_text(r) for r in rows]


def _changes_section(changes: Sequence[Mapping[str, Any]], baseline: str) -> str:
    by_variant: dict[str, list[Mapping[str, Any]]] = {}
    for row in changes:
        by_variant.setdefault(str(row[VARIANT_COLUMN]), []).append(row)
    if not by_variant:
        return ""
    items = "".join(
        f"<details class='cl-changes' open><summary>{_e(name)}: {len(rows)} setting(s) differ "
        f"from {_e(baseline)}</summary>{changes_html(rows, baseline, name)}</details>"
        for name, rows in by_variant.items()
    )
    return (
        f"<div class='convlab'>{style_tag()}<div class='cl-title'>What changed in "
        f"the agent (against the baseline {_e(baseline)})</div>{items}</div>"
    )


def _display_frame(lb: pd.DataFrame) -> pd.DataFrame:
    """The columns the declaration shows in a table (convlab.analysis.columns.LEADERBOARD),
    those with some figure, under their titles."""
    from convlab.analysis.columns import LEADERBOARD

    cols = [c for c in LEADERBOARD.shown() if c in lb.columns and not lb[c].isna().all()]
    out = lb[cols].copy()
    base = lb.attrs.get("baseline")
    out[VARIANT_COLUMN] = [
        f"{name} (baseline)" if name == base else str(name) for name in lb[VARIANT_COLUMN]
    ]
    return out.rename(columns=LEADERBOARD.titles())


def leaderboard_table(lb: Leaderboard | pd.DataFrame) -> Table:
    """The leaderboard as an interactive table (columns with no figure at all left out)."""
    name = lb.attrs.get("experiment")
    caption = "Leaderboard" + (f" · {name}" if name else "")
    return Table(_display_frame(lb), caption, description=lb.attrs.get("note"))


def leaderboard_bundle(lb: Leaderboard | pd.DataFrame) -> dict[str, Any]:
    """The leaderboard in a notebook: the table, then what changed in the agent."""
    changes = lb.attrs.get("changes") or []
    base = str(lb.attrs.get("baseline", ""))
    text = pd.DataFrame(lb).to_string(index=False, max_cols=12)
    return {
        "text/plain": visible(f"{lb.attrs.get('note', '')}\n\n{text}"),
        "text/html": leaderboard_table(lb)._repr_html_() + _changes_section(changes, base),
    }


def matrix_table(exp: Experiment, count_errors_as: str = "failed") -> Table:
    """`Experiment.matrix()`: pass rate (%) per case and variant; sort any column."""
    from convlab.analysis.leaderboard import matrix_frame

    frame = matrix_frame(exp, count_errors_as)
    return Table(
        frame,
        f"Pass rate per case and variant (%) · {exp.name}",
        description=(
            "One row per case, one column per variant; spread_pp: best minus worst variant "
            "(sort it to find the cases the variants disagree on); passed/runs per variant "
            "in the same order."
        ),
    )


def _heading(exp: Experiment) -> tuple[str, str]:
    suite = exp.suite
    bits = [f"Experiment {exp.id}", exp.name]
    bits += [f"suite {suite.name or suite.id}" if suite is not None else ""]
    runs = exp.settings.get("runs")
    bits += [f"{len(exp)} variants" + (f" x {runs} run(s)" if runs else ""), exp.status]
    return " · ".join(b for b in bits if b), ", ".join(exp.variants)


def experiment_text(exp: Experiment) -> str:
    """A few lines: the experiment, then per variant its pass rate and agent."""
    lb = exp.leaderboard()
    title, _ = _heading(exp)
    lines = [title]
    for row in lb.to_dict("records"):
        mark = " (baseline)" if row["baseline"] else ""
        lines.append(
            f"  {row[VARIANT_COLUMN]}{mark}: pass rate {pct(row['pass_rate'])} "
            f"[{pct(row['ci_low'])}, {pct(row['ci_high'])}]  {shorten(str(row['agent']), 60)}"
        )
    return visible("\n".join(lines))


def experiment_card(exp: Experiment) -> tuple[str, str]:
    """The experiment as text and as HTML: heading, leaderboard, what changed in the agent."""
    lb = exp.leaderboard()
    title, variants = _heading(exp)
    failed = [f"{n}: {r.error}" for n, r in exp.runs.items() if r.error]
    errors = "".join(f"<div class='cl-fail'>{_e(line)}</div>" for line in failed)
    head = (
        f"<div class='convlab'>{style_tag()}<div class='cl-card'>"
        f"<div class='cl-title'>{_e(title)}</div>"
        f"<div class='cl-muted'>variants: {_e(variants)}</div>{errors}</div></div>"
    )
    html_out = head + leaderboard_bundle(lb)["text/html"]
    return experiment_text(exp), html_out


def experiment_bundle(exp: Experiment) -> dict[str, Any]:
    """`Experiment` in a notebook: its card (once in a cell that also ran it)."""
    from convlab.notebook.progress import fold_live_view

    fold_live_view(exp.id)
    text, card = experiment_card(exp)
    return {"text/plain": text, "text/html": card}
