"""`run.divergence()` in a notebook: the branches as a table and, for one case, a passing and
a failing run side by side, aligned turn by turn, the fork turn marked."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from convlab.notebook._charts_divergence import divergence_figure
from convlab.notebook.tables import Table

if TYPE_CHECKING:
    import pandas as pd

    from convlab.analysis._divergence import Divergence

__all__ = [
    "DIVERGENCE_VIEW",
    "divergence_bundle",
    "divergence_figure",
    "divergence_table",
    "experiment_divergence_bundle",
]

DIVERGENCE_VIEW = (
    "case_id",
    "branch",
    "fork_turn",
    "side",
    "step",
    "runs",
    "passed",
    "pass_rate",
    "path",
    "p_holm",
)
"""The columns the table shows (`.df`, the frame itself, keeps every column)."""


def divergence_table(frame: Divergence) -> Table:
    """The branches as an interactive table, the fork turn counted from 1."""
    cases = [str(c) for c in frame["case_id"].unique()] if "case_id" in frame.columns else []
    one = len(cases) == 1
    cols = [c for c in DIVERGENCE_VIEW if c in frame.columns and not (one and c == "case_id")]
    note = (
        "One row per case and branch: where the case's runs fork (turn, counted from 1), what "
        "each branch did there, its runs and passes, and Fisher's exact test of branch against "
        "pass, Holm-corrected over the case's forks (p_holm)."
    )
    caption = f"Divergence of {cases[0]} · branches" if one else "Divergence · branches"
    return Table(frame, caption, description=note, columns=cols,
                 counted=("fork_turn",))  # fmt: skip


def divergence_bundle(frame: Divergence) -> dict[str, Any]:
    """The notebook output: the branches and, for one case, its why and a passing and a
    failing run side by side (text: pandas' own frame, then the same)."""
    from convlab._readable import visible
    from convlab.analysis.divergence import case_trees
    from convlab.analysis.why import case_why
    from convlab.notebook._side_by_side import side_by_side_html, side_by_side_text

    table = divergence_table(frame)
    text, extra = [visible(repr(frame))], ""
    run, case_id = frame.source
    if run is not None and case_id is not None:
        tree = case_trees(run, case_id).get(case_id)
        if tree is not None:
            why = case_why(tree)
            text += ["", visible(why), side_by_side_text(run, tree)]
            extra = (
                f"<div class='convlab'><p class='cl-why-line'>{html.escape(why)}</p></div>"
                + side_by_side_html(run, tree)
            )
    return {"text/plain": "\n".join(t for t in text if t), "text/html": table._repr_html_() + extra}


def experiment_divergence_bundle(frame: pd.DataFrame) -> dict[str, Any]:
    """`exp.divergence(case_id)` in a notebook: the baseline's main path, then the table."""
    from convlab._readable import visible

    base, main = frame.attrs.get("baseline", ""), frame.attrs.get("main_path", "")
    head = f"The baseline ({base})'s main path: {main}"
    note = (
        "Per variant: its runs that follow the baseline's main path (leaves_at empty) and, "
        "for the others, the turn (counted from 1) where they leave it and what they did "
        "there; share = the variant's runs taking that way (percent)."
    )
    table = Table(frame, "Divergence across variants", description=note, counted=("leaves_at",))
    return {
        "text/plain": visible(f"{head}\n{frame!r}"),
        "text/html": f"<div class='convlab'><p>{html.escape(head)}</p></div>" + table._repr_html_(),
    }
