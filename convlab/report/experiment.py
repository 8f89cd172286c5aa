"""An experiment as a report: a standalone offline page (`exp.save("x.html")`), Markdown
(`.md`), and the report notebook `convlab report experiment.json -o report.html` executes.

The page holds what the notebook shows: the experiment's card (leaderboard, what changed in
the agent), the case x variant matrix, the heatmap and the trade-off charts, then each
variant's summary card. plotly.js and the DataTables bundle are inlined once; nothing is
fetched. Every variant name, setting, prompt and case id is escaped.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convlab.analysis.columns import LEADERBOARD
from convlab.analysis.io import register_saver, write_atomic
from convlab.model.experiment import VARIANT_COLUMN
from convlab.report.markdown import cell

if TYPE_CHECKING:
    from convlab.model.experiment import Experiment

__all__ = ["experiment_cells", "experiment_html_report", "experiment_markdown"]

_PAGE_CSS = """
main.convlab{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
main.convlab h1{font-size:22px;margin:8px 0 2px}
main.convlab h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;
 border-bottom:1px solid var(--cl-border)}
main.convlab h3{font-size:14px;margin:16px 0 4px}
main.convlab .cl-meta{color:var(--cl-muted);margin-bottom:10px}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _title(exp: Experiment) -> str:
    suite = exp.suite
    name = (suite.name or suite.id) if suite is not None else ""
    return "convlab experiment: " + exp.name + (f" · {name}" if name else "")


def _tradeoffs(exp: Experiment) -> list[Any]:
    """The trade-off charts that have something to show (cost only when some cost is known)."""
    board = exp.leaderboard()
    axes = ["cost"] if board["cost_usd"].notna().any() else []
    return [exp.plot.tradeoff(x=x) for x in [*axes, "latency"]]


def experiment_html_report(exp: Experiment) -> str:
    """A standalone offline HTML page for `exp` (no kernel, no network)."""
    from convlab.htmlkit import PAGE_BODY_CSS, one_bundle, one_style
    from convlab.notebook.display import experiment_card, run_html
    from convlab.report.notebook import plotly_script, without_itables_links

    meta = [exp.status, f"started {exp.started_at}" if exp.started_at else "", f"id {exp.id}"]
    figures = [exp.plot.matrix(), *_tradeoffs(exp)]
    sections = [
        f"<h1>{_e(_title(exp))}</h1>",
        f'<div class="cl-meta">{_e(" · ".join(m for m in meta if m))}</div>',
        "<h2>Leaderboard</h2>",
        experiment_card(exp)[1],
        "<h2>Pass rate per case and variant</h2>",
        exp.matrix().to_html(bundle=False),
        "<h2>Charts</h2>",
        *(str(fig._repr_mimebundle_()["text/html"]) for fig in figures),
        "<h2>Variants</h2>",
        *(f"<h3>{_e(name)}</h3>{run_html(run)}" for name, run in exp.runs.items()),
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f"<title>{_e(_title(exp))}</title>\n<style>{PAGE_BODY_CSS}{_PAGE_CSS}</style>\n"
        f"{plotly_script()}\n</head>\n<body>\n"
        '<main class="convlab">\n'
        + without_itables_links(one_bundle("\n".join(sections)))  # the table script, once
        + "\n</main>\n</body>\n</html>\n"
    )
    return one_style(page)  # the stylesheet, once


@register_saver(".html", ".htm", what="experiment")
def _save_html(exp: Experiment, path: Path) -> None:
    write_atomic(path, experiment_html_report(exp))


def _num(value: Any, fmt: str) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(number) else format(number, fmt)


def experiment_markdown(exp: Experiment) -> str:
    """The experiment in Markdown: the leaderboard, what changed in the agent, the matrix."""
    from convlab.analysis.agent_diff import change_text
    from convlab.analysis.leaderboard import matrix_frame

    board = exp.leaderboard()
    lines = [f"# {cell(_title(exp))}", "", f"{cell(exp.status)} · id {cell(exp.id)}", ""]
    lines += ["## Leaderboard", "", cell(board.attrs.get("note", "")), ""]
    shown = LEADERBOARD.brief()  # the declared columns, titles and formats
    lines += ["| " + " | ".join(cell(c.title) for c in shown) + " |", "|" + "---|" * len(shown)]
    for row in board.to_dict("records"):
        values = [cell(c.cell({str(k): v for k, v in row.items()})) for c in shown]
        lines.append("| " + " | ".join(values) + " |")
    changes = board.attrs.get("changes") or []
    if changes:
        lines += ["", f"## What changed in the agent (against {cell(board.attrs['baseline'])})", ""]
        lines += [f"- {cell(c[VARIANT_COLUMN])}: {cell(change_text(c))}" for c in changes]
    matrix = matrix_frame(exp)
    lines += ["", "## Pass rate per case and variant (%)", ""]
    lines += ["| case | " + " | ".join(cell(v) for v in exp.variants) + " |"]
    lines += ["|" + "---|" * (len(exp.variants) + 1)]
    for row in matrix.to_dict("records"):
        rates = [_num(row[v], ".0f") or "-" for v in exp.variants]
        lines.append(f"| {cell(row['case_id'])} | " + " | ".join(rates) + " |")
    return "\n".join(lines) + "\n"


@register_saver(".md", ".markdown", what="experiment")
def _save_markdown(exp: Experiment, path: Path) -> None:
    write_atomic(path, experiment_markdown(exp))


def experiment_cells(exp: Experiment, ref: str) -> list[tuple[str, str]]:
    """(kind, source) of each cell of an experiment's report notebook (built by
    convlab.report.notebook.build_notebook); its code loads the experiment from `ref`."""
    from convlab.report.notebook import _md

    cells = [
        ("markdown", f"# Experiment report: {_md(exp.name)}"),
        ("code", f"import convlab as cl\n\nexp = cl.load_experiment({ref!r})\nexp"),
        ("markdown", "## Pass rate per case and variant"),
        ("code", "exp.matrix()"),
        ("code", "exp.plot.matrix()"),
        ("markdown", "## Trade-offs"),
    ]
    if exp.leaderboard()["cost_usd"].notna().any():
        cells.append(("code", 'exp.plot.tradeoff(x="cost")'))
    cells.append(("code", 'exp.plot.tradeoff(x="latency")'))
    return cells
