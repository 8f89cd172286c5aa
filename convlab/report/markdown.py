"""A run as Markdown: for CI job summaries, pull-request comments and plain-text review.

GitHub-flavoured tables break on a `|` or a newline inside a cell, and agent replies, case ids
and error messages are untrusted text that may hold either (or HTML), so every cell goes
through `cell()`. `run.save("report.md")` and `convlab report run.json -o report.md` use it.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlab._readable import cut, pct, visible
from convlab.analysis.io import register_saver, write_atomic
from convlab.notebook.display import cases_rated

if TYPE_CHECKING:
    from convlab.analysis.compare import Comparison
    from convlab.model.run import Run

__all__ = ["cell", "code", "comparison_markdown", "run_markdown"]

_REASON_LIMIT = 300
_FAILURES_LIMIT = 200
"""Failures listed; a CI summary with thousands of rows helps nobody (the rest are counted)."""
_NEWLINES = re.compile(r"\r\n|\r|\n")
_TICKS = re.compile("`+")


def cell(value: Any, limit: int | None = None) -> str:
    """`value` as the text of one Markdown table cell: pipes escaped, newlines as `<br>`.

    `&`, `<` and `>` are escaped too, so an agent reply holding HTML shows as text where the
    renderer would otherwise pass the HTML through; `[` and `]` too, so agent text never forms
    a link (`[x](javascript:...)`); control characters become visible `\\xNN` text, so a
    terminal `cat`ting the file runs no escape sequence.
    """
    text = "" if value is None else str(value)
    if isinstance(value, float) and math.isnan(value):
        text = ""
    if limit is not None:
        text = cut(text, limit)
    text = visible(text, bidi=True)
    text = html.escape(text, quote=False).replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("$", "\\$")  # GitHub reads `$...$` as math
    text = text.replace("[", "\\[").replace("]", "\\]")  # no `[x](javascript:...)` links
    return _NEWLINES.sub("<br>", text)


def code(value: Any, in_table: bool = True) -> str:
    """`value` as a Markdown code span: shown exactly as it is (ids are code, and a code span
    reads no HTML, entity, escape or link), but for control and bidirectional characters,
    shown as in `cell()`, and newlines, which a table cell cannot hold, as spaces.

    The fence is one backtick longer than the longest run inside; `in_table` escapes `|` as
    `\\|`, which GFM tables read back as `|` before the code span is read.
    """
    text = _NEWLINES.sub(" ", visible("" if value is None else str(value), bidi=True))
    if not text:
        return ""
    if in_table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(t) for t in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


_BLAME_RULE = (
    "Only the agent's failures count towards the pass rate; failures blamed on the simulator, "
    "the judge, the infrastructure, the suite or a hook are counted apart."
)


def _title(run: Run) -> str:
    suite = (run.suite.name or run.suite.id) if run.suite else ""
    bits = [f"suite {suite}" if suite else "", f"agent {run.agent}" if run.agent else ""]
    return "convlab report" + "".join(f" · {cell(b)}" for b in bits if b)


def _counts(s: dict[str, Any]) -> str:
    parts = [f"{s['passed']} passed", f"{s['failed']} failed", f"{s['errors']} errors"]
    parts += [f"{s[k]} {k}" for k in ("timeouts", "skipped", "blocked", "cancelled") if s.get(k)]
    return f"**{s['total']} instances**: " + ", ".join(parts)


def run_markdown(run: Run) -> str:
    """Summary, a per-case table (pass rate, stability class) and the failures with reasons."""
    from convlab.analysis.frames import cost_line, instances_frame, suite_order
    from convlab.analysis.stats import stability, summary
    from convlab.report.why import why_markdown

    df = instances_frame(run)
    stab = stability(df, order=suite_order(run))
    s = summary(df, stab)
    lines = [f"# {_title(run)}", ""]
    meta = [f"run {code(run.id, in_table=False)}" if run.id else "", cell(run.status)]
    meta += [f"started {cell(run.started_at)}" if run.started_at else ""]
    lines += [" · ".join(m for m in meta if m), ""]
    lines += [
        _counts(s) + f" · pass rate **{pct(s['pass_rate'])}** (mean over {cases_rated(s)} cases)"
    ]
    blamed = {b: n for b, n in s["blame"].items() if n}
    if blamed:
        counts = ", ".join(f"{b} {n}" for b, n in blamed.items())
        lines += ["", f"**Not passed, by blame:** {counts}. {_BLAME_RULE}"]
    spent = cost_line(run.summary)
    if spent:
        lines += ["", cell(spent[0].upper() + spent[1:])]
    if run.error:
        lines += ["", f"**Run error:** {cell(run.error)}"]
    lines += ["", "## Cases", ""]
    rows = [
        [
            code(r["case_id"]),
            str(r["runs"]),
            str(r["passed"]),
            pct(r["pass_rate"]),
            cell(r["stability"]),
            cell(r["not_agent_blame"]) or "-",
        ]
        for r in stab.to_dict("records")
    ]
    head = ["case", "runs", "passed", "pass rate", "stability", "not the agent's"]
    lines += _table(head, rows)
    lines += why_markdown(run)
    bad = df[df["status"] != "passed"]
    lines += ["", "## Failures", ""]
    if bad.empty:
        lines.append("None: every instance passed.")
    else:
        rows = [
            [
                code(r["case_id"]),
                cell(r["variant"]),
                str(r["run"] + 1),  # people count from 1; Run.df from 0
                str(r["repetition"] + 1),
                cell(r["status"]),
                cell(r["blame"] or ""),
                cell(r["error"], _REASON_LIMIT) + _at(r.get("error_location")),
            ]
            for r in bad.head(_FAILURES_LIMIT).to_dict("records")
        ]
        lines += _table(["case", "variant", "run", "rep", "status", "blame", "reason"], rows)
        if len(bad) > _FAILURES_LIMIT:
            lines += ["", f"… and {len(bad) - _FAILURES_LIMIT} more not listed."]
    failed_suite = [a for a in run.suite_assertions if a.status in ("failed", "error")]
    if failed_suite:
        lines += ["", "## Suite checks that did not pass", ""]
        lines += [
            f"- {cell(a.label or a.kind)}: {cell(a.error or a.message)}" for a in failed_suite
        ]
    return "\n".join(lines) + "\n"


def _at(location: str | None) -> str:
    """` at `my_agent.py:12 in reply``: where the user's code raised; '' when it did not."""
    return f" at {code(location)}" if location else ""


@register_saver(".md", ".markdown")
def _save_markdown(run: Run, path: Path) -> None:
    write_atomic(path, run_markdown(run))


def comparison_markdown(cmp: Comparison) -> str:
    """A comparison in Markdown: its summary paragraph, then one row per case."""
    lines = ["# convlab comparison", "", cell(cmp.summary), ""]
    columns = [str(c) for c in cmp.columns]
    rows = [[cell("" if _blank(v) else v) for v in r.values()] for r in cmp.to_dict("records")]
    lines += _table(columns, rows)
    return "\n".join(lines) + "\n"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@register_saver(".md", ".markdown", what="comparison")
def _save_comparison(cmp: Comparison, path: Path) -> None:
    write_atomic(path, comparison_markdown(cmp))
