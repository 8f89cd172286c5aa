"""`run.divergence()`'s frame: a pandas DataFrame that a notebook shows as the branches and,
for one case, a passing and a failing run side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from convlab.model.run import Run

__all__ = ["Divergence", "ExperimentDivergence"]


class Divergence(pd.DataFrame):
    """`run.divergence()`: one row per case and branch (convlab.analysis.divergence), a
    pandas DataFrame in every respect. Frames derived from it are plain DataFrames.

    In a notebook it shows the branches as a table and, when one case was asked for, a
    passing and a failing run of it side by side, aligned turn by turn, the fork marked.
    """

    @classmethod
    def of(cls, df: pd.DataFrame, run: Run, case_id: str | None) -> Divergence:
        """`df` as a Divergence of `run` (for `case_id`, or every case)."""
        out = cls(df)
        out.attrs = dict(df.attrs)
        object.__setattr__(out, "_source", (run, case_id))
        return out

    @property
    def source(self) -> tuple[Run | None, str | None]:
        """The run it was computed from and the case asked for (None: every case)."""
        got: tuple[Run | None, str | None] = getattr(self, "_source", (None, None))
        return got

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from convlab.model import faces

        return faces.divergence_bundle(self)


class ExperimentDivergence(pd.DataFrame):
    """`exp.divergence(case_id)`: where each variant's runs leave the baseline's main path
    (convlab.analysis.experiment_divergence), a pandas DataFrame; a notebook shows it as a
    table under that path."""

    @classmethod
    def of(cls, df: pd.DataFrame) -> ExperimentDivergence:
        """`df` (experiment_divergence's frame) as an ExperimentDivergence, attrs kept."""
        out = cls(df)
        out.attrs = dict(df.attrs)
        return out

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from convlab.model import faces

        return faces.experiment_divergence_bundle(self)
