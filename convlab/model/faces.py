"""The named lazy hooks by which analysis results show themselves.

Analysis results (a comparison, a leaderboard, the stability frame, a divergence, the
history) are plain data: they never import a view. Their reprs, `.table()` and `.plot()` call
these hooks, and each hook imports the view that draws the value on first use. They are the
only way from data up to the notebook views, each one named, and listed in the import
contract (pyproject.toml), as the model's own reprs are; `import convlab` loads none of the
views.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "comparison_bundle",
    "comparison_figure",
    "comparison_table",
    "divergence_bundle",
    "experiment_divergence_bundle",
    "frame_table",
    "history_figure",
    "leaderboard_bundle",
    "leaderboard_table",
    "stability_table",
]


def comparison_figure(comparison: Any) -> Any:
    """`Comparison.plot()`: before vs after pass rate per case (a Plotly figure)."""
    from convlab.notebook.charts import compare_figure

    return compare_figure(comparison)


def comparison_table(comparison: Any) -> Any:
    """`Comparison.table()`: the change table, interactive."""
    from convlab.notebook.tables import compare_table

    return compare_table(comparison)


def comparison_bundle(comparison: Any) -> dict[str, Any]:
    """A comparison in a notebook: the paragraph, then the change table."""
    from convlab.notebook.display import comparison_bundle as bundle

    return bundle(comparison)


def leaderboard_table(board: Any) -> Any:
    """`Leaderboard.table()`: the leaderboard, interactive."""
    from convlab.notebook._experiment_view import leaderboard_table as table

    return table(board)


def leaderboard_bundle(board: Any) -> dict[str, Any]:
    """A leaderboard in a notebook: the table, then what changed in the agent."""
    from convlab.notebook._experiment_view import leaderboard_bundle as bundle

    return bundle(board)


def stability_table(stability: Any) -> Any:
    """`Stability.table()`: the main columns of `run.stability()`, interactive."""
    from convlab.notebook.tables import stability_table as table

    return table(stability)


def divergence_bundle(divergence: Any) -> dict[str, Any]:
    """A divergence in a notebook: where the runs of a case part ways."""
    from convlab.notebook.divergence import divergence_bundle as bundle

    return bundle(divergence)


def experiment_divergence_bundle(divergence: Any) -> dict[str, Any]:
    """An experiment's divergence in a notebook: where each variant leaves the baseline's
    main path."""
    from convlab.notebook.divergence import experiment_divergence_bundle as bundle

    return bundle(divergence)


def history_figure(frame: Any, by: str = "agent") -> Any:
    """`History.plot()`: pass rate of each run over time, a line per `by` (a Plotly figure)."""
    from convlab.notebook._charts_history import history_figure as figure

    return figure(frame, by)


def frame_table(frame: Any, caption: str, description: str | None = None) -> Any:
    """Any frame as an interactive table (sortable, searchable, offline)."""
    from convlab.notebook.tables import Table

    return Table(frame, caption, description=description)
