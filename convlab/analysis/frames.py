"""DataFrames over a Run's records: instances, turns, assertions, checkpoints, tool calls.

Each frame is derived from the records by one function, every time it is asked for, so it can
never drift from them. When a run holds more than one record for an instance key (a store that
was resumed), the latest record wins, in every frame and statistic alike. Rows come in suite
order, then variant (as first seen), repetition and run index.

Indexes are 0-based, as Python counts: `run`, `repetition`, `turn` and a tool call's `index`
(the first run is run 0; `ctx.turn` is the same turn index). `reached_at_turn` is the one
turn *number* (index + 1). Everything a person reads (tables, charts, cards, the tree, the
console, reports) counts runs and turns from 1.

Saving and loading runs (`save`, `load_run`) live in `convlab.analysis.io`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from convlab.engine._gc import paused_gc
from convlab.model.records import AssertionResult, CaseResult, TurnResult
from convlab.model.results import Results
from convlab.model.rows import InstanceRow, failed_count, instance_row, why_not_passed
from convlab.model.run import Run
from convlab.model.suite import Suite

if TYPE_CHECKING:
    import pandas as pd

    from convlab.analysis.rollup import Rollup

__all__ = [
    "ASSERTION_COLUMNS",
    "CHECKPOINT_COLUMNS",
    "INSTANCE_COLUMNS",
    "SUITE_COLUMNS",
    "TOOL_CALL_COLUMNS",
    "TURN_COLUMNS",
    "assertions_frame",
    "checkpoints_frame",
    "cost_line",
    "in_run_order",
    "instances",
    "instances_frame",
    "run_pass_k_table",
    "run_rollup",
    "run_stability",
    "run_summary",
    "suite_frame",
    "suite_order",
    "tool_calls_frame",
    "turns_frame",
    "unpriced_models",
    "why_not_passed",
]

_T = TypeVar("_T")
KEY_COLUMNS = ("case_id", "variant", "repetition", "run")
INSTANCE_COLUMNS = InstanceRow._fields
TURN_COLUMNS = (
    *KEY_COLUMNS,
    "turn",
    "step_id",
    "turn_variant",
    "input",
    "response",
    "status",
    "duration_ms",
    "latency_ms",
    "tool_calls",
    "tools",
    "assertions",
    "assertions_failed",
    "error",
    "total_tokens",
)
ASSERTION_COLUMNS = (
    *KEY_COLUMNS,
    "scope",
    "turn",
    "kind",
    "id",
    "label",
    "status",
    "passed",
    "message",
    "expected",
    "actual",
    "error",
    "score",
    "duration_ms",
    "children",
)
CHECKPOINT_COLUMNS = (
    *KEY_COLUMNS,
    "checkpoint",
    "required",
    "reached",
    "reached_at_turn",
    "passed",
    "message",
)
TOOL_CALL_COLUMNS = (
    *KEY_COLUMNS,
    "turn",
    "index",
    "name",
    "arguments",
    "result",
    "error",
    "call_id",
)


def instances(run: Run) -> list[CaseResult]:
    """The latest record per instance key, in suite order, then variant, repetition, run."""
    latest: dict[tuple[str, str, int, int], CaseResult] = {}
    for r in run.results:
        latest[r.key] = r
    return in_run_order(run, latest)


def instance_rows(run: Run) -> list[InstanceRow]:
    """`instances` as their `Run.df` rows (a run's `Results` decodes a line for its row
    without keeping the record)."""
    results = run.results
    rows = results.rows() if isinstance(results, Results) else map(instance_row, results)
    latest: dict[tuple[str, str, int, int], InstanceRow] = {}
    for row in rows:
        latest[row.key] = row
    return in_run_order(run, latest)


def in_run_order(run: Run, latest: dict[tuple[str, str, int, int], _T]) -> list[_T]:
    """The values of `latest` (by instance key) in suite order, then variant (as first
    seen), repetition and run index."""
    rank = {c.id: i for i, c in enumerate(run.suite.cases)} if run.suite else {}
    first_case: dict[str, int] = {}
    first_variant: dict[str, int] = {}
    for cid, var, _, _ in latest:
        first_case.setdefault(cid, len(first_case))
        first_variant.setdefault(var, len(first_variant))

    def order(key: tuple[str, str, int, int]) -> tuple[int, int, int, int, int]:
        cid, var, rep, idx = key
        return (rank.get(cid, len(rank)), first_case[cid], first_variant[var], rep, idx)

    return [latest[k] for k in sorted(latest, key=order)]


def _n_calls(t: TurnResult) -> int:
    return len(t.observation.tool_calls) if t.observation else 0


def _frame(rows: Iterable[tuple[Any, ...]], columns: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame.from_records(rows, columns=list(columns))


def instances_frame(run: Run) -> pd.DataFrame:
    """`Run.df`: one row per executed case instance (the documented columns first).

    Built with the cyclic collector paused: every row it makes stays until the frame is
    made, and a collection would rescan them all (a 100,000-result store's frame took a
    third longer)."""
    with paused_gc():
        return _frame(instance_rows(run), INSTANCE_COLUMNS)


def _input_text(t: TurnResult) -> str:
    if t.input is not None and t.input.text:
        return t.input.text
    return "\n".join(m.text() for m in t.messages)


def _response_text(t: TurnResult) -> str:
    obs = t.observation
    if obs is None:
        return ""
    if obs.text is not None:
        return obs.text
    return "" if obs.data is None else json.dumps(obs.data, ensure_ascii=False, default=str)


def turns_frame(run: Run) -> pd.DataFrame:
    """One row per user turn of every instance: input, response, status, tools, checks."""
    rows = []
    for r in instances(run):
        for t in r.turns:
            obs = t.observation
            rows.append(
                (
                    *r.key,
                    t.index,
                    t.step_id,
                    t.variant,
                    _input_text(t),
                    _response_text(t),
                    t.status,
                    t.duration_ms,
                    obs.latency_ms if obs else None,
                    _n_calls(t),
                    ", ".join(c.name for c in obs.tool_calls) if obs else "",
                    len(t.assertions),
                    failed_count(t.assertions),
                    t.error or (obs.error if obs else None) or "",
                    obs.usage.total_tokens if obs and obs.usage else 0,
                )
            )
    return _frame(rows, TURN_COLUMNS)


def _assertion_row(
    r: CaseResult, scope: str, turn: int | None, a: AssertionResult
) -> tuple[Any, ...]:
    key = r.key if scope != "suite" else ("", "", None, None)
    return (
        *key,
        scope,
        turn,
        a.kind,
        a.id,
        a.label,
        a.status,
        a.passed,
        a.message,
        a.expected,
        a.actual,
        a.error,
        a.score,
        a.duration_ms,
        len(a.children),
    )


def assertions_frame(run: Run) -> pd.DataFrame:
    """One row per top-level assertion result: turn scope, case scope, then suite scope.

    Children of composite assertions (all/any/not) stay inside their parent (`children` counts
    them); suite-scope rows have an empty case id and no instance key.
    """
    rows = []
    for r in instances(run):
        for t in r.turns:
            rows += [_assertion_row(r, "turn", t.index, a) for a in t.assertions]
        rows += [_assertion_row(r, "case", None, a) for a in r.assertions]
    placeholder = CaseResult(case_id="", status="passed")
    rows += [_assertion_row(placeholder, "suite", None, a) for a in run.suite_assertions]
    df = _frame(rows, ASSERTION_COLUMNS)
    return df.astype({"repetition": "Int64", "run": "Int64", "turn": "Int64"})


def checkpoints_frame(run: Run) -> pd.DataFrame:
    """One row per checkpoint of every dynamic instance: reached, when, passed."""
    rows = [
        (*r.key, cp.id, cp.required, cp.reached, cp.reached_at_turn, cp.passed, cp.message or "")
        for r in instances(run)
        for cp in r.checkpoints
    ]
    return _frame(rows, CHECKPOINT_COLUMNS).astype({"reached_at_turn": "Int64"})


def tool_calls_frame(run: Run) -> pd.DataFrame:
    """One row per tool call the agent made, with its turn, arguments and result."""
    rows = [
        (*r.key, t.index, i, c.name, c.arguments, c.result, c.error, c.id)
        for r in instances(run)
        for t in r.turns
        if t.observation
        for i, c in enumerate(t.observation.tool_calls)
    ]
    return _frame(rows, TOOL_CALL_COLUMNS)


def suite_order(run: Run) -> list[str]:
    """Case ids in the order the suite lists them (empty when the run has no suite)."""
    return [c.id for c in run.suite.cases] if run.suite is not None else []


def run_stability(
    run: Run,
    k: int | None = None,
    count_errors_as: str = "failed",
    by_variant: bool = False,
    interval: str = "wilson",
) -> pd.DataFrame:
    """`Run.stability()`: convlab.analysis.stats.stability over `Run.df`, rows in suite order,
    as a `Stability` frame (an interactive table in a notebook)."""
    from convlab.analysis._stability import as_stability
    from convlab.analysis.divergence import path_counts
    from convlab.analysis.stats import stability

    paths = path_counts(run, by_variant, count_errors_as)
    frame = stability(run.df, k, count_errors_as, suite_order(run), by_variant, interval, paths)
    return as_stability(frame)


def run_pass_k_table(
    run: Run, ks: Iterable[int] | None = None, count_errors_as: str = "failed"
) -> pd.DataFrame:
    """`Run.pass_k_table()`: pass^k and pass@k per case for several k."""
    from convlab.analysis.stats import pass_k_table

    return pass_k_table(run.df, ks, count_errors_as, suite_order(run))


def case_rollup(
    run: Run, count_errors_as: str = "failed"
) -> tuple[list[InstanceRow], dict[str, dict[str, Any]]]:
    """The latest `Run.df` row per instance and each case's `case_row` (counts, pass rate,
    class), with no DataFrame: the same figures as `Run.stability()`, in one pass, so
    `Run.summary` and the summary cards of big runs stay cheap."""
    from convlab.analysis.stats import case_row, counting_mode, tally_rows

    mode = counting_mode(count_errors_as)
    latest = instance_rows(run)
    tallies = tally_rows(
        ((r.case_id, r.status, r.duration_ms, r.blame) for r in latest), 1, suite_order(run)
    )
    return latest, {key[0]: case_row(t, mode) for key, t in tallies.items()}


def run_rollup(run: Run) -> Rollup:
    """The summary and the per-case roll-up every view of `run` reads
    (convlab.analysis.rollup): computed once for a finished run and kept with it
    (`Run.kept`), on each call for a run in progress."""
    from convlab.analysis.rollup import rollup

    return run.kept("_rollup", lambda: rollup(run))


def run_summary(run: Run, count_errors_as: str = "failed") -> dict[str, Any]:
    """`Run.summary` counting errors as `count_errors_as` (computed anew)."""
    from convlab.analysis.rollup import rollup

    return rollup(run, count_errors_as).summary


def cost_line(summary: dict[str, Any]) -> str:
    """`cost $0.0123 · tokens: agent 1,234, judge 56`, or why the cost is missing; '' when
    no model call reported usage."""
    tokens = {role: n for role, n in (summary.get("tokens") or {}).items() if n}
    if not tokens:
        return ""
    used = "tokens: " + ", ".join(f"{role} {n:,}" for role, n in tokens.items())
    cost = summary.get("cost_usd")
    if cost is not None:
        shown = f"{cost:,.2f}" if cost >= 1 else f"{cost:.3g}"
        return f"cost ${shown} · {used}"
    models = ", ".join(repr(m) for m in summary.get("unpriced_models") or [])
    return (
        f"cost unknown: no price for {models} (pass prices={{model: {{'input_mtok': ..., "
        f"'output_mtok': ...}}}}) · {used}"
    )


def unpriced_models(run: Run) -> list[str]:
    """The models whose calls in `run` have no price (what makes its cost missing)."""
    found = {
        s.model or "(no model named)" for r in run.results for s in r.spend if s.cost_usd is None
    }
    return sorted(found)


SUITE_COLUMNS = ("case_id", "name", "mode", "turns", "assertions", "tags", "source", "skip")


def suite_frame(suite: Suite) -> pd.DataFrame:
    """One row per case: id, name, mode, turns, assertions, tags, source, skip."""
    import pandas as pd

    rows = [
        (
            c.id,
            c.name or "",
            c.mode,
            c.n_turns,
            c.n_assertions,
            list(c.tags),
            str(c.source) if c.source else "",
            c.skip or "",
        )
        for c in suite.cases
    ]
    return pd.DataFrame.from_records(rows, columns=list(SUITE_COLUMNS))
