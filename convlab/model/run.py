"""A whole run: the suite, the agent, the settings and every case instance's result."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, MutableSequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from convlab._readable import visible
from convlab.model.codec import FORMAT, encode, to_builtins
from convlab.model.records import AssertionResult, CaseResult
from convlab.model.results import Results
from convlab.model.suite import Suite

if TYPE_CHECKING:
    import os
    from pathlib import Path

    import pandas as pd

__all__ = ["Run", "RunStatus", "Summary"]

RunStatus = Literal["running", "completed", "cancelled", "failed"]
T = TypeVar("T")


class Run(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, dict=True):
    """A whole run: the suite, the agent, the settings and every case instance's result.

    Frames (`df`, `turns_df`, ...), statistics (`stability()`, `summary`) and `save()` are
    derived views, added by convlab.analysis.frames and convlab.analysis.stats. A run
    encodes (convlab.model.codec) as one JSON object, its results as their records.

    What every view of a finished run reads (`summary` and its per-case roll-up) is computed
    once and kept with the run (`kept`); a run in progress computes it on each read.
    """

    format_version: int = FORMAT
    """The version of the encoding its results were written in (convlab.model.codec)."""
    id: str = ""
    suite: Suite | None = None
    agent: str = ""
    """The agent's description (never a secret)."""
    agent_settings: dict[str, Any] = {}
    """What the agent is made of (`Agent.settings()`: spec, model, system prompt, params, ...;
    never a secret), so two runs can say what changed between them."""
    settings: dict[str, Any] = {}
    """runs, parallel, timeout_s, ... as given to run()."""
    results: MutableSequence[CaseResult] = msgspec.field(default_factory=Results)
    """Every instance's result, in plan order (a run the engine made or a store read back
    holds them as `Results`: lines until read)."""
    suite_assertions: list[AssertionResult] = []
    started_at: str | None = None
    finished_at: str | None = None
    status: RunStatus = "completed"
    error: str | None = None
    """Why the run did not complete normally (a run-level hook failed)."""
    fingerprint: str = ""
    """Hash of the suite definition; a resumed store must match it."""

    def to_dict(self, *, exclude: Collection[str] = ()) -> dict[str, Any]:
        """The run as JSON-ready builtins, but for the fields named in `exclude`."""
        return {
            name: to_builtins(getattr(self, name))
            for name in self.__struct_fields__
            if name not in exclude
        }

    def to_json(self) -> str:
        """The run's JSON text (its results as their records)."""
        return encode(self).decode()

    def without_results(self) -> Run:
        """A copy of the run holding no results (what a store's header says)."""
        return msgspec.structs.replace(self, results=[])

    def kept(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()`, kept with a finished run under `name` (never encoded): the first
        read of a run whose status is not "running" computes it, later reads get the same
        object. A run in progress computes it on each read, and a kept value is computed
        again when `results` is replaced or changes length, or the status changes."""
        key = (id(self.results), len(self.results), self.status)
        held = self.__dict__.get(name)
        if held is not None and held[0] == key:
            return held[1]  # type: ignore[no-any-return]
        value = compute()
        if self.status != "running":
            self.__dict__[name] = (key, value)
        return value

    # Derived views, computed from `results` on every call (the convlab.analysis package).

    @property
    def df(self) -> pd.DataFrame:
        """One row per case instance: case_id, variant, repetition, run, status, error, ...

        `run` and `repetition` are 0-based indexes (the first run is 0); the tables, cards,
        tree, console and reports show them counting from 1."""
        from convlab.analysis.frames import instances_frame

        return instances_frame(self)

    @property
    def turns_df(self) -> pd.DataFrame:
        """One row per user turn: input, response, status, tool calls, assertion counts.

        `turn` is the 0-based turn index (as `ctx.turn`); views show turn 1 for it."""
        from convlab.analysis.frames import turns_frame

        return turns_frame(self)

    @property
    def assertions_df(self) -> pd.DataFrame:
        """One row per assertion result (turn, case and suite scope); `turn` is 0-based."""
        from convlab.analysis.frames import assertions_frame

        return assertions_frame(self)

    @property
    def checkpoints_df(self) -> pd.DataFrame:
        """One row per checkpoint of every dynamic instance; `reached_at_turn` is the turn's
        number counted from 1 (turn index + 1), as the views show turns."""
        from convlab.analysis.frames import checkpoints_frame

        return checkpoints_frame(self)

    @property
    def tool_calls_df(self) -> pd.DataFrame:
        """One row per tool call the agent made; `turn` and `index` (the call's place in its
        turn) are 0-based."""
        from convlab.analysis.frames import tool_calls_frame

        return tool_calls_frame(self)

    def stability(
        self,
        k: int | None = None,
        count_errors_as: str = "failed",
        by_variant: bool = False,
        interval: str = "wilson",
    ) -> pd.DataFrame:
        """Per-case pass rate, class, pass^k (unbiased and thinkingbox's (c/n)^k), the
        `interval` ("wilson" or "jeffreys"), goldilocks zone, durations (analysis.stats).

        A DataFrame (every column); a notebook shows its main columns as an interactive
        table. `stability` is the class the views show (`always fails` for a case that never
        passes); `classification` is Yao's class, `verdict` the plain words."""
        from convlab.analysis.frames import run_stability

        return run_stability(self, k, count_errors_as, by_variant, interval)

    def divergence(
        self, case_id: str | None = None, count_errors_as: str = "failed"
    ) -> pd.DataFrame:
        """Where each case's repeated runs fork and which branch passes: one row per case
        and branch (`case_id`, `branch`, `runs`, `passed`, `pass_rate`, `fork_turn` 0-based,
        `side`, `step`, `path`, `p_value`, `p_holm`, ...); a case whose runs took one path
        has one row (convlab.analysis.divergence).

        In a notebook, for one case, it also shows a passing and a failing run side by side,
        aligned turn by turn, the fork marked."""
        from convlab.analysis.divergence import run_divergence

        return run_divergence(self, case_id, count_errors_as)

    def why(self, case_id: str | None = None, count_errors_as: str = "failed") -> str:
        """One plain sentence on why the case is flaky: the fork that decides whether its
        runs pass ("Runs that called lookup_policy at turn 2 passed 9 of 10; runs that
        skipped it passed 1 of 5 (p = 0.004)."). With no case: one line per flaky case."""
        from convlab.analysis.divergence import case_trees, known_case
        from convlab.analysis.why import run_why

        if case_id is not None:
            known_case(self, case_id)
        return run_why(case_trees(self, case_id, count_errors_as), case_id)

    def pass_k_table(
        self, ks: Iterable[int] | None = None, count_errors_as: str = "failed"
    ) -> pd.DataFrame:
        """pass^k and pass@k per case for each k in `ks` (default thinkingbox's grid
        {1, 5, 10, 20, 50, 100}, k <= runs)."""
        from convlab.analysis.frames import run_pass_k_table

        return run_pass_k_table(self, ks, count_errors_as)

    @property
    def summary(self) -> Summary:
        """Totals by status, overall pass rate (mean of case rates), stable/unstable counts,
        tokens and cost.

        One pass over the results. A finished run computes it once and keeps it (`kept`):
        the card, the console, the reports, the leaderboard and the history all read that
        one; a run still in progress (status "running") computes it on every read. Each
        read returns a fresh dict."""
        from convlab.analysis.frames import run_rollup

        return Summary(run_rollup(self).summary)

    def table(self, kind: str = "instances") -> Any:
        """An interactive table (sortable, searchable, offline) of one of the run's frames.

        kind: `instances`, `cases`, `stability`, `turns`, `assertions`, `checkpoints` or
        `tool_calls`.
        """
        from convlab.notebook.tables import run_table

        return run_table(self, kind)

    @property
    def plot(self) -> Any:
        """Plotly figures of this run: `pass_rates()`, `stability()`, `durations()`, ..."""
        from convlab.notebook.charts import RunPlots

        return RunPlots(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the run; the suffix picks the format (`.json`, `.jsonl`, ...)."""
        from convlab.analysis.io import save

        return save(self, path)

    def __repr__(self) -> str:
        # cheap on purpose: asyncio and debuggers repr results freely; str() has the card
        counts: dict[str, int] = {}
        results = self.results
        statuses = (
            results.statuses() if isinstance(results, Results) else [r.status for r in results]
        )
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        parts = ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        return visible(
            f"<Run {self.id or '-'} {self.status}: {len(self.results)} results ({parts})>"
        )

    def __str__(self) -> str:
        from convlab.notebook.display import run_text

        return run_text(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from convlab.notebook.display import run_bundle

        return run_bundle(self)


class Summary(dict[str, Any]):
    """`Run.summary`: a plain dict (total, passed, failed, errors, ..., pass_rate) that a
    notebook shows as a card."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from convlab.notebook.display import summary_bundle

        return summary_bundle(self)
