"""Result records: what one assertion, turn, checkpoint and case instance produced.

Frames and statistics are derived views over these records (the convlab.analysis package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_validator,
)

from convlab.model.blame import BLAMED_STATUSES, Blame, case_blame
from convlab.model.conversation import Message, Observation, Usage
from convlab.model.records import Results, Status
from convlab.model.suite import Suite, TurnInput

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable
    from pathlib import Path

    import pandas as pd

__all__ = [
    "AssertionResult",
    "CaseResult",
    "CheckpointResult",
    "Run",
    "Status",
    "Summary",
    "TurnResult",
]

AssertionStatus = Literal["passed", "failed", "error", "skipped"]


class AssertionResult(BaseModel):
    """The outcome of one assertion: pass/fail, what was expected, what was found, and where."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    id: str | None = None
    label: str | None = None
    status: AssertionStatus = "passed"
    message: str = ""
    expected: Any = None
    actual: Any = None
    error: str | None = None
    """Why the evaluator could not decide (crash, bad config, no judge); never a pass."""
    blame: Blame | None = None
    """Whose fault an `error` is (`judge`, `suite`, `infrastructure`; convlab.model.blame)."""
    score: float | None = None
    duration_ms: float = 0.0
    children: list[AssertionResult] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True only for a pass (errors and skips are not passes)."""
        return self.status == "passed"

    def __repr__(self) -> str:
        head = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP"}[
            self.status
        ]
        name = self.label or self.id or self.kind
        lines = [f"{head} {name}" + (f": {self.message}" if self.message else "")]
        if self.status != "passed":
            lines += [f"  expected: {self.expected!r}", f"  actual:   {self.actual!r}"]
        if self.error:
            lines.append(f"  error: {self.error}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"


class TurnResult(BaseModel):
    """One user turn: what was sent, what the agent did, what the checks said."""

    model_config = ConfigDict(extra="forbid")

    index: int
    step_id: str | None = None
    variant: str | None = None
    input: TurnInput | None = None
    messages: list[Message] = Field(default_factory=list)
    """The user messages sent in this turn (simulated users included)."""
    observation: Observation | None = None
    assertions: list[AssertionResult] = Field(default_factory=list)
    status: AssertionStatus = "passed"
    duration_ms: float = 0.0
    error: str | None = None
    code: str | None = None
    """The turn's error code (intention-kernel's turn `errorCode`), None unless it erred."""


class CheckpointResult(BaseModel):
    """Whether a dynamic case reached a checkpoint, and when."""

    model_config = ConfigDict(extra="forbid")

    id: str
    reached: bool = False
    reached_at_turn: int | None = None
    required: bool = True
    passed: bool = False
    message: str | None = None


class CaseResult(BaseModel):
    """One executed case instance, keyed by (case id, variant ids, repetition, run index)."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    variant: dict[str, str] = Field(default_factory=dict)
    """Chosen variant id per step id."""
    repetition: int = 0
    run: int = 0
    status: Status
    reward: float = 0.0
    turns: list[TurnResult] = Field(default_factory=list)
    assertions: list[AssertionResult] = Field(default_factory=list)
    """Case-scope assertions (standard checks, final checks, the Python test)."""
    checkpoints: list[CheckpointResult] = Field(default_factory=list)
    error: str | None = None
    code: str | None = None
    """A stable code for why the instance did not pass or fail on its own checks:
    intention-kernel's codes (EVALUATION_TRANSPORT_FAILED, EVALUATOR_FAILED,
    EXTERNAL_WRITES_NOT_AUTHORIZED, ...; convlab.engine.codes lists them), for every
    format. None for a pass or a plain failure. Runs saved before it existed load as None."""
    blame: Blame | None = None
    """Whose fault it is that the instance did not pass (None when it passed, was skipped,
    blocked or cancelled); see convlab.model.blame. Inferred when a saved run lacks it."""
    duration_ms: float = 0.0
    attempts: int = 1
    usage: Usage | None = None
    started_at: str | None = None
    finish_reason: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _settle_blame(self) -> CaseResult:
        # runs saved before blame existed get it inferred from their records; only a
        # non-pass verdict has one
        if self.status not in BLAMED_STATUSES:
            if self.blame is not None:
                self.blame = None
        elif self.blame is None:
            self.blame = case_blame(self)
        return self

    @property
    def key(self) -> tuple[str, str, int, int]:
        """The instance key: (case id, variant ids joined, repetition, run index)."""
        return (self.case_id, variant_label(self.variant), self.repetition, self.run)


def variant_label(variant: dict[str, str]) -> str:
    """Variant ids joined as `step=variant,...` (empty when none)."""
    if not variant:  # most instances: no generator to run (a run labels each one)
        return ""
    return ",".join(f"{k}={v}" for k, v in variant.items())


class Run(BaseModel):
    """A whole run: the suite, the agent, the settings and every case instance's result.

    Frames (`df`, `turns_df`, ...), statistics (`stability()`, `summary`) and `save()` are
    derived views, added by convlab.analysis.frames and convlab.analysis.stats.
    """

    model_config = ConfigDict(extra="forbid")

    format_version: int = 1
    id: str = ""
    suite: Suite | None = None
    agent: str = ""
    """The agent's description (never a secret)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """runs, parallel, timeout_s, ... as given to run()."""
    results: list[CaseResult] = Field(default_factory=list)
    suite_assertions: list[AssertionResult] = Field(default_factory=list)
    started_at: str | None = None
    finished_at: str | None = None
    status: Literal["running", "completed", "cancelled", "failed"] = "completed"
    error: str | None = None
    """Why the run did not complete normally (a run-level hook failed)."""
    fingerprint: str = ""
    """Hash of the suite definition; a resumed store must match it."""

    @field_serializer("results", mode="wrap")
    def _results_as_list(self, results: Any, handler: SerializerFunctionWrapHandler) -> Any:
        """A run the engine made holds its results lean (convlab.model.records.Results):
        dumped as the list they stand for."""
        return handler(results if type(results) is list else list(results))

    # Derived views, computed from `results` on every call (the convlab.analysis package).

    @property
    def df(self) -> pd.DataFrame:
        """One row per case instance: case_id, variant, repetition, run, status, error, ..."""
        from convlab.analysis.frames import instances_frame

        return instances_frame(self)

    @property
    def turns_df(self) -> pd.DataFrame:
        """One row per user turn: input, response, status, tool calls, assertion counts."""
        from convlab.analysis.frames import turns_frame

        return turns_frame(self)

    @property
    def assertions_df(self) -> pd.DataFrame:
        """One row per assertion result (turn, case and suite scope)."""
        from convlab.analysis.frames import assertions_frame

        return assertions_frame(self)

    @property
    def checkpoints_df(self) -> pd.DataFrame:
        """One row per checkpoint of every dynamic instance."""
        from convlab.analysis.frames import checkpoints_frame

        return checkpoints_frame(self)

    @property
    def tool_calls_df(self) -> pd.DataFrame:
        """One row per tool call the agent made."""
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
        `interval` ("wilson" or "jeffreys"), goldilocks zone, durations (analysis.stats)."""
        from convlab.analysis.frames import run_stability

        return run_stability(self, k, count_errors_as, by_variant, interval)

    def pass_k_table(
        self, ks: Iterable[int] | None = None, count_errors_as: str = "failed"
    ) -> pd.DataFrame:
        """pass^k and pass@k per case for each k in `ks` (default thinkingbox's grid
        {1, 5, 10, 20, 50, 100}, k <= runs)."""
        from convlab.analysis.frames import run_pass_k_table

        return run_pass_k_table(self, ks, count_errors_as)

    @property
    def summary(self) -> Summary:
        """Totals by status, overall pass rate (mean of case rates), stable/unstable counts."""
        from convlab.analysis.frames import run_summary

        return Summary(run_summary(self))

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
            results.statuses() if isinstance(results, Results) else (r.status for r in results)
        )
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        parts = ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        return f"<Run {self.id or '-'} {self.status}: {len(self.results)} results ({parts})>"

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
