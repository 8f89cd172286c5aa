"""An experiment: several variants of an agent (prompts, models, parameters) run on one suite
in one call, one Run per variant.

The runs are plain Runs, each equal to what a run of that variant alone would give; the
leaderboard, the case x variant matrix, the charts and the comparisons are derived views
(convlab.analysis.leaderboard, convlab.notebook), computed on every call.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from convlab._readable import visible
from convlab.model.run import Run, RunStatus

if TYPE_CHECKING:
    import os
    from pathlib import Path

    import pandas as pd

    from convlab.model.suite import Suite

__all__ = ["VARIANT_COLUMN", "Experiment"]

VARIANT_COLUMN = "agent_variant"
"""The column naming an experiment's variant in its frames (`exp.df`, the leaderboard).

Not `variant`: in `Run.df` that column already names a case's own variant (a suite's
`step=variant` combination), and an experiment's long frame keeps every `Run.df` column as it
is."""


class Experiment:
    """Variants of an agent run on one suite together: `runs` maps each variant's name to its
    Run (in the order given); `baseline` is the variant the others are measured against (the
    first unless set).

    Views: `df` (every run's `Run.df`, with `agent_variant`), `leaderboard()`, `matrix()`,
    `plot.matrix()`, `plot.tradeoff()`, `compare(a, b)`, `changes()`; `save(path)` writes it
    (`.json` reads back with `convlab.load_experiment`, `.html`, `.md`).
    """

    def __init__(
        self,
        runs: Mapping[str, Run],
        *,
        name: str = "",
        id: str = "",
        baseline: str | None = None,
        settings: Mapping[str, Any] | None = None,
        started_at: str | None = None,
        finished_at: str | None = None,
    ) -> None:
        if not runs:
            raise ValueError("an experiment needs at least one variant")
        self.runs: dict[str, Run] = dict(runs)
        self.name = name or " vs ".join(self.runs)
        self.id = id or uuid.uuid4().hex[:12]
        self.settings: dict[str, Any] = dict(settings or {})
        """The options every variant ran with (runs, parallel, timeout, ...)."""
        self.started_at, self.finished_at = started_at, finished_at
        self._baseline = next(iter(self.runs))
        if baseline is not None:
            self.baseline = baseline

    @property
    def baseline(self) -> str:
        """The variant the leaderboard compares the others with (the first by default)."""
        return self._baseline

    @baseline.setter
    def baseline(self, name: str) -> None:
        self._check(name)
        self._baseline = name

    @property
    def variants(self) -> list[str]:
        """The variants' names, in the order given."""
        return list(self.runs)

    @property
    def suite(self) -> Suite | None:
        """The suite every variant ran."""
        return next(iter(self.runs.values())).suite

    @property
    def status(self) -> RunStatus:
        """`completed` when every run completed; else `failed` or `cancelled` if one was."""
        statuses = {run.status for run in self.runs.values()}
        for status in ("failed", "cancelled", "running"):
            if status in statuses:
                return status  # type: ignore[return-value]
        return "completed"

    def _check(self, name: str) -> str:
        if name not in self.runs:
            import difflib

            close = difflib.get_close_matches(str(name), self.variants, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise KeyError(
                f"no variant {name!r} in this experiment ({', '.join(self.runs)}).{hint}"
            )
        return name

    def __getitem__(self, name: str) -> Run:
        return self.runs[self._check(name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def __contains__(self, name: object) -> bool:
        return name in self.runs

    # Derived views (convlab.analysis.leaderboard, convlab.notebook), computed on every call.

    @property
    def df(self) -> pd.DataFrame:
        """Every variant's `Run.df`, one below the other, `agent_variant` first."""
        from convlab.analysis.leaderboard import experiment_frame

        return experiment_frame(self)

    def leaderboard(
        self,
        baseline: str | None = None,
        alpha: float = 0.05,
        count_errors_as: str = "failed",
        interval: str = "wilson",
    ) -> Any:
        """One row per variant: pass rate and its interval, stability classes, tokens, cost,
        latency, and against `baseline` (default `self.baseline`) the cases better or worse
        beyond noise and Holm-corrected p-values (a DataFrame, shown as an interactive table).
        """
        from convlab.analysis.leaderboard import leaderboard

        return leaderboard(self, baseline, alpha, count_errors_as, interval)

    def matrix(self, count_errors_as: str = "failed") -> Any:
        """Pass rate per case (rows) and variant (columns) as an interactive table; `.df` is
        the frame."""
        from convlab.notebook._experiment_view import matrix_table

        return matrix_table(self, count_errors_as)

    @property
    def plot(self) -> Any:
        """Plotly figures of this experiment: `matrix()` and `tradeoff(x="cost"|"latency")`."""
        from convlab.notebook._charts_experiment import ExperimentPlots

        return ExperimentPlots(self)

    def compare(
        self, before: str, after: str, alpha: float = 0.05, count_errors_as: str = "failed"
    ) -> Any:
        """`convlab.compare` of two variants' runs (a `Comparison`, with what changed in the
        agent)."""
        from convlab.analysis.compare import compare

        return compare(self[before], self[after], alpha, count_errors_as)

    def divergence(self, case_id: str) -> pd.DataFrame:
        """Where each variant's runs of the case leave the baseline's main path (its most
        common trajectory): one row per variant and way, `leaves_at` the 0-based turn (NA:
        they follow it), `side`, `step`, `runs`, `passed`, `pass_rate`, `share`
        (convlab.analysis.experiment_divergence). In a notebook, a table under that path."""
        from convlab.analysis._divergence import ExperimentDivergence
        from convlab.analysis.experiment_divergence import experiment_divergence

        return ExperimentDivergence.of(experiment_divergence(self, case_id))

    def changes(self, baseline: str | None = None) -> pd.DataFrame:
        """The agent settings that differ from `baseline`'s (default `self.baseline`): one row
        per variant and setting (`params.temperature`, `system`, ...), with both values."""
        from convlab.analysis.agent_diff import experiment_changes

        return experiment_changes(self, self._check(baseline or self.baseline))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the experiment: `.json` (every run, whole; `convlab.load_experiment` reads it
        back), `.html` (a page that opens offline) or `.md`."""
        from convlab.analysis.io import save

        return save(self, path, "experiment")

    def __repr__(self) -> str:
        parts = ", ".join(f"{name}: {len(run.results)} results" for name, run in self.runs.items())
        return visible(f"<Experiment {self.id} {self.name!r} {self.status}: {parts}>")

    def __str__(self) -> str:
        from convlab.notebook._experiment_view import experiment_text

        return experiment_text(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from convlab.notebook._experiment_view import experiment_bundle

        return experiment_bundle(self)
