"""`Run.stability()`'s frame: a pandas DataFrame that a notebook shows as an interactive table."""

from __future__ import annotations

from typing import Any

import pandas as pd

from convlab._readable import visible
from convlab.model import faces

__all__ = ["Stability", "as_stability"]


class Stability(pd.DataFrame):
    """`run.stability()`: one row per case and every column (convlab.analysis.stats), a pandas
    DataFrame in every respect (columns, `.loc`, `to_dict`, ...).

    In a notebook it renders as an interactive table of its main columns, the same as
    `run.table("stability")` (sortable, searchable, offline); printed, it is pandas' text.
    Frames derived from it (a column selection, a filter, `set_index`) are plain DataFrames.
    """

    def table(self) -> Any:
        """The interactive table of the main columns (`.df` keeps every column)."""
        return faces.stability_table(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": visible(repr(self)), "text/html": self.table()._repr_html_()}


def as_stability(df: pd.DataFrame) -> Stability:
    """`df` (a stability frame from convlab.analysis.stats) as a `Stability`, attrs kept."""
    out = Stability(df)
    out.attrs = dict(df.attrs)
    return out
