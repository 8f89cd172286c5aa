"""Why cases are unstable, in the reports: `convlab why STORE [CASE]` (console text), the
Markdown report's section and the HTML report's section.

Each flaky case (some runs passed, some did not) gets its `run.why()` sentence and its
branches (convlab.analysis.divergence): where the runs fork, what each branch did, its runs
and passes, the corrected p-value and its path. The words are made once here (`case_parts`)
and each format only escapes them its own way: control characters made visible on a console,
Markdown's cell escaping, HTML's.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from convlab._readable import pct
from convlab.analysis.divergence import (
    DIVERGENCE_COLUMNS,
    CaseTree,
    case_trees,
    frame_rows,
    known_case,
    p_text,
)
from convlab.analysis.why import case_why
from convlab.report._console_text import clean

if TYPE_CHECKING:
    from convlab.model.run import Run

__all__ = [
    "SHOWN_CASES",
    "CaseParts",
    "case_parts",
    "flaky_trees",
    "why_html",
    "why_markdown",
    "why_text",
]

SHOWN_CASES = 20
"""Flaky cases a report explains (the worst first); the rest are counted."""
_CHARTS = 5
"""Flaky cases whose chart the HTML report draws."""


@dataclass(frozen=True)
class CaseParts:
    """One case's explanation in plain words, before any escaping."""

    case_id: str
    head: str
    """`63.3% passed (19 of 30) · 2 paths · 63% of runs on the main path`"""
    why: str
    branches: list[tuple[str, str]]
    """Per branch: its line (`branch 0 · turn 2 · agent · lookup_policy(amount) · 19 runs,
    19 passed (100%) · p < 0.001`) and its path."""


def case_parts(tree: CaseTree) -> CaseParts:
    """The words that explain one case."""
    rate = 100 * tree.passed / tree.runs if tree.runs else float("nan")
    head = f"{pct(rate)} passed ({tree.passed} of {tree.runs}) · {tree.paths} path" + (
        "s" if tree.paths != 1 else ""
    )
    head += f" · {pct(100 * tree.main_path_share)} of runs on the main path"
    branches = []
    for values in frame_rows(tree):
        row = dict(zip(DIVERGENCE_COLUMNS, values, strict=True))
        if row["fork_turn"] is None:
            line = f"one path · {row['runs']} runs, {row['passed']} passed"
        else:
            line = (
                f"branch {row['branch']} · turn {row['fork_turn'] + 1} · {row['side']} · "
                f"{row['step']} · {row['runs']} runs, {row['passed']} passed "
                f"({pct(row['pass_rate'])}) · {p_text(row['p_holm'])}"
            )
        branches.append((line, str(row["path"])))
    return CaseParts(tree.case_id, head, case_why(tree), branches)


def flaky_trees(run: Run) -> dict[str, CaseTree]:
    """The trees of the run's flaky cases, the lowest pass rate first (suite order next)."""
    trees = [t for t in case_trees(run).values() if t.flaky]
    trees.sort(key=lambda t: t.passed / t.runs)
    return {t.case_id: t for t in trees}


def why_text(run: Run, case_id: str | None = None) -> str:
    """`convlab why`: the case's explanation, or every flaky case's (control characters
    made visible: agent and user text never drives the terminal)."""
    if case_id is not None:
        known_case(run, case_id)
        trees = case_trees(run, case_id)
        if case_id not in trees:
            return f"{clean(case_id)}: no run of this case reached a verdict that counts."
    else:
        trees = flaky_trees(run)
        if not trees:
            return "No case is flaky: each passed in all its runs or in none."
    lines = []
    for tree in trees.values():
        parts = case_parts(tree)
        lines += [f"{clean(parts.case_id)}  {parts.head}", f"  {clean(parts.why)}"]
        for line, path in parts.branches:
            lines += [f"  {clean(line)}", f"      {clean(path)}"]
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def why_markdown(run: Run) -> list[str]:
    """The Markdown report's section (no lines when no case is flaky)."""
    from convlab.report.markdown import cell, code

    trees = flaky_trees(run)
    if not trees:
        return []
    out = ["", "## Why cases are unstable", ""]
    shown = list(trees.values())[:SHOWN_CASES]
    for tree in shown:
        parts = case_parts(tree)
        out += [f"### {code(parts.case_id, in_table=False)}", "", cell(parts.head), ""]
        out += [cell(parts.why), ""]
        out += [f"- {cell(line)}<br>{cell(path)}" for line, path in parts.branches]
        out.append("")
    if len(trees) > len(shown):
        out.append(f"{len(trees) - len(shown)} more flaky case(s) not shown.")
    return out


def why_html(run: Run) -> str:
    """The HTML report's section: per flaky case its sentence, branches and chart ('' when
    no case is flaky)."""
    from convlab.notebook.divergence import divergence_figure

    trees = flaky_trees(run)
    if not trees:
        return ""
    e = html.escape
    out = ["<h2>Why cases are unstable</h2>"]
    for n, tree in enumerate(list(trees.values())[:SHOWN_CASES]):
        parts = case_parts(tree)
        items = "".join(
            f"<li>{e(line)}<div class='cl-muted'>{e(path)}</div></li>"
            for line, path in parts.branches
        )
        out += [
            f"<h3><code>{e(parts.case_id)}</code></h3>",
            f"<div class='cl-muted'>{e(parts.head)}</div>",
            f"<p>{e(parts.why)}</p>",
            f"<ul class='cl-branches'>{items}</ul>",
        ]
        if n < _CHARTS:
            out.append(str(divergence_figure(tree)._repr_mimebundle_()["text/html"]))
    if len(trees) > SHOWN_CASES:
        out.append(f"<p>{len(trees) - SHOWN_CASES} more flaky case(s) not shown.</p>")
    return "\n".join(out)
