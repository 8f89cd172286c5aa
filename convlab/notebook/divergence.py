"""`run.divergence()` in a notebook: the branches as a table and, for one case, a passing and
a failing run side by side, aligned turn by turn, the fork turn marked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convlab.notebook.tables import Table

if TYPE_CHECKING:
    from convlab.analysis._divergence import Divergence

__all__ = ["DIVERGENCE_VIEW", "divergence_bundle", "divergence_table"]

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
    cols = [c for c in DIVERGENCE_VIEW if c in frame.columns]
    note = (
        "One row per case and branch: where the case's runs fork (turn, counted from 1), what "
        "each branch did there, its runs and passes, and Fisher's exact test of branch against "
        "pass, Holm-corrected over the case's forks (p_holm)."
    )
    return Table(frame, "Divergence · branches", description=note, columns=cols,
                 counted=("fork_turn",))  # fmt: skip


def divergence_bundle(frame: Divergence) -> dict[str, Any]:
    """The notebook output: text (pandas' own) and the HTML view."""
    table = divergence_table(frame)
    return {"text/plain": repr(frame), "text/html": table._repr_html_()}
