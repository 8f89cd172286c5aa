"""An experiment's figures: its long frame, the leaderboard (one row per variant) and the case x
variant matrix of pass rates.

How the leaderboard counts, for each variant's run:

- `pass_rate` is `Run.summary`'s: the mean of the per-case pass rates (percent), the agent's
  failures only (convlab.analysis.stats says how each status counts);
- `runs` and `passed` pool every case's counted runs; `ci_low`/`ci_high` are the 95%
  interval of passed / runs (Wilson by default, or Jeffreys);
- `stable`, `mostly_stable`, `unstable`, `highly_unstable`, `always_fails` and `one_run` count
  cases by their `stability` (the class every view shows: a case that fails every run is
  `always_fails`, never unstable; convlab.analysis._classes), `flaky` the cases whose runs
  disagree;
- tokens are summed over the instances (in all, and by role: agent, simulator, judge);
  `cost_usd` is the run's total (`Run.summary["cost_usd"]`), missing (NaN) when a model call
  has no price, never 0 for unknown (`attrs["unpriced"]` names the models, by variant);
- `latency_p50_ms`/`latency_p95_ms` are percentiles of the agent's reply latency over every
  turn of every instance (linear interpolation, as pandas' `quantile`).

Against the baseline variant, per case: Fisher's exact test (two-sided, the test
`convlab.compare` uses) on that case's passes and non-passes in the two runs. Every case is
tested once per variant, so each case's p-values are Holm-corrected over the variants
(Holm-Bonferroni, step-down); `cases_better` and `cases_worse` count the cases whose own
corrected p-value is below `alpha`. `pooled_p` is the same test on the pooled runs (all cases
together), `pooled_p_holm` that p-value Holm-corrected over the variants, and
`pooled_beyond_noise` is pooled_p_holm < alpha. The two tests answer different questions and
may disagree (one case beyond noise, the pooled rate not; or the reverse): the names say
which is which, and so does the leaderboard's caption (`attrs["note"]`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from convlab.analysis._intervals import interval_kind, interval_of
from convlab.analysis.columns import LEADERBOARD, ROLE_TOKENS, STABILITY_COLUMNS
from convlab.analysis.stats import STABILITY, counting_mode, fisher_exact, holm
from convlab.model import faces
from convlab.model.experiment import VARIANT_COLUMN

if TYPE_CHECKING:
    from convlab.model.experiment import Experiment
    from convlab.model.run import Run

__all__ = [
    "Leaderboard",
    "experiment_frame",
    "holm",
    "leaderboard",
    "matrix_frame",
    "pareto_front",
]


class Leaderboard(pd.DataFrame):
    """`Experiment.leaderboard()`: one row per variant, best pass rate first; `attrs` holds the
    baseline, alpha, the interval, how errors counted, the test in words (`note`) and the
    agent settings that differ from the baseline's (`changes`). Its columns, their titles
    and formats are declared in convlab.analysis.columns.LEADERBOARD."""

    def table(self) -> Any:
        """The leaderboard as an interactive table (sortable, searchable, offline)."""
        return faces.leaderboard_table(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return faces.leaderboard_bundle(self)


def experiment_frame(exp: Experiment) -> pd.DataFrame:
    """`Experiment.df`: each variant's `Run.df` with its name in `agent_variant` (first)."""
    frames = [run.df.assign(**{VARIANT_COLUMN: name}) for name, run in exp.runs.items()]
    out = pd.concat(frames, ignore_index=True)
    return out[[VARIANT_COLUMN, *[c for c in out.columns if c != VARIANT_COLUMN]]]


def pareto_front(costs: Sequence[float], rates: Sequence[float]) -> list[bool]:
    """Which points no other point beats: none with a cost as low or lower and a pass rate as
    high or higher, one of them strictly. A point with an unknown (NaN) figure is never on it."""
    known = [not (math.isnan(c) or math.isnan(r)) for c, r in zip(costs, rates, strict=True)]
    out = []
    for i, (c, r) in enumerate(zip(costs, rates, strict=True)):
        if not known[i]:
            out.append(False)
            continue
        beaten = any(
            known[j] and costs[j] <= c and rates[j] >= r and (costs[j] < c or rates[j] > r)
            for j in range(len(costs))
        )
        out.append(not beaten)
    return out


def _latencies(run: Run) -> list[float]:
    """The agent's reply latencies over the turns of the latest record of every instance."""
    from convlab.analysis.frames import instances

    return [
        float(t.observation.latency_ms)
        for r in instances(run)
        for t in r.turns
        if t.observation is not None and t.observation.latency_ms is not None
    ]


def _total(df: pd.DataFrame, column: str) -> float:
    if column not in df.columns:
        return math.nan
    return float(pd.to_numeric(df[column], errors="coerce").fillna(0).sum())


def _cost(run: Run, df: pd.DataFrame) -> float:
    """The run's cost: `Run.summary["cost_usd"]` when the summary has it, else the sum of
    `Run.df.cost_usd`; NaN when unknown (never 0 for unknown)."""
    summary = run.summary
    if "cost_usd" in summary:
        value = summary["cost_usd"]
        return math.nan if value is None else float(value)
    if "cost_usd" not in df.columns or df.empty:
        return math.nan
    costs = pd.to_numeric(df["cost_usd"], errors="coerce")
    return math.nan if costs.isna().any() else float(costs.sum())


def _quantile(values: list[float], q: float) -> float:
    return float(pd.Series(values, dtype="float64").quantile(q)) if values else math.nan


def _variant_row(name: str, run: Run, mode: str, kind: str) -> tuple[dict[str, Any], Any]:
    """A variant's own figures, and its stability table (for the tests against the baseline)."""
    stab = run.stability(count_errors_as=mode, interval=kind)
    df = run.df
    rated = stab[stab["runs"] > 0]
    runs, passed = int(stab["runs"].sum()), int(stab["passed"].sum())
    low, high = interval_of(passed, runs, kind)
    latencies = _latencies(run)
    row: dict[str, Any] = {
        VARIANT_COLUMN: name,
        "agent": run.agent,
        "pass_rate": float(rated["pass_rate"].mean()) if len(rated) else math.nan,
        "ci_low": 100 * low,
        "ci_high": 100 * high,
        "runs": runs,
        "passed": passed,
        "cases": len(stab),
        **{
            name: int((rated["stability"] == c).sum())
            for name, c in zip(STABILITY_COLUMNS, STABILITY, strict=True)
        },
        "flaky": int(rated["flaky"].sum()),
        "not_agent": int(stab["not_agent"].sum()),
        "total_tokens": _total(df, "total_tokens"),
        **{c: _total(df, c) for c in ROLE_TOKENS},
        "cost_usd": _cost(run, df),
        "latency_p50_ms": _quantile(latencies, 0.5),
        "latency_p95_ms": _quantile(latencies, 0.95),
    }
    return row, stab


def _case_tests(base: pd.DataFrame, other: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Per case in both runs: (Fisher's p, change in percentage points)."""
    b = {str(r["case_id"]): r for r in base.to_dict("records")}
    out: dict[str, tuple[float, float]] = {}
    for r in other.to_dict("records"):
        cid = str(r["case_id"])
        if cid not in b or not r["runs"] or not b[cid]["runs"]:
            continue
        nb, cb, na, ca = (
            int(b[cid]["runs"]),
            int(b[cid]["passed"]),
            int(r["runs"]),
            int(r["passed"]),
        )
        p = fisher_exact(cb, nb - cb, ca, na - ca)
        out[cid] = (p, 100 * ca / na - 100 * cb / nb)
    return out


def leaderboard(
    exp: Experiment,
    baseline: str | None = None,
    alpha: float = 0.05,
    count_errors_as: str = "failed",
    interval: str = "wilson",
) -> Leaderboard:
    """`Experiment.leaderboard()` (the module docstring says how each figure is made)."""
    from convlab.analysis.agent_diff import experiment_changes

    mode, kind = counting_mode(count_errors_as), interval_kind(interval)
    base_name = baseline if baseline is not None else exp.baseline
    exp[base_name]  # an unknown name is a KeyError naming the variants
    rows, tables = {}, {}
    for name, run in exp.runs.items():
        rows[name], tables[name] = _variant_row(name, run, mode, kind)
    others = [n for n in exp.runs if n != base_name]
    tests = {n: _case_tests(tables[base_name], tables[n]) for n in others}
    corrected: dict[str, dict[str, float]] = {n: {} for n in others}
    for cid in {c for t in tests.values() for c in t}:
        names = [n for n in others if cid in tests[n]]
        for n, p in zip(names, holm([tests[n][cid][0] for n in names]), strict=True):
            corrected[n][cid] = p
    base = rows[base_name]
    pooled = {}
    for n in others:
        r = rows[n]
        pooled[n] = (
            fisher_exact(
                base["passed"], base["runs"] - base["passed"], r["passed"], r["runs"] - r["passed"]
            )
            if r["runs"] and base["runs"]
            else math.nan
        )
    adjusted = dict(zip(others, holm([pooled[n] for n in others]), strict=True))
    records = []
    for name in exp.runs:
        row = rows[name]
        is_base = name == base_name
        changed = corrected.get(name, {})
        delta = {cid: tests[name][cid][1] for cid in changed} if not is_base else {}
        p_holm = adjusted.get(name, math.nan)
        records.append(
            LEADERBOARD.derive(
                {
                    **row,
                    "baseline": is_base,
                    "delta_pp": row["pass_rate"] - base["pass_rate"],
                    "cases_better": pd.NA
                    if is_base
                    else sum(p < alpha and delta[c] > 0 for c, p in changed.items()),
                    "cases_worse": pd.NA
                    if is_base
                    else sum(p < alpha and delta[c] < 0 for c, p in changed.items()),
                    "pooled_p": pooled.get(name, math.nan),
                    "pooled_p_holm": p_holm,
                    "pooled_beyond_noise": bool(p_holm < alpha),
                }
            )
        )
    frame = pd.DataFrame.from_records(records, columns=list(LEADERBOARD.names()))
    frame["cases_better"] = frame["cases_better"].astype("Int64")
    frame["cases_worse"] = frame["cases_worse"].astype("Int64")
    order = frame["pass_rate"].fillna(-1).sort_values(ascending=False, kind="stable").index
    out = Leaderboard(frame.loc[order].reset_index(drop=True))
    changes = experiment_changes(exp, base_name)
    unpriced = {
        name: list(run.summary.get("unpriced_models") or [])
        for name, run in exp.runs.items()
        if math.isnan(rows[name]["cost_usd"]) and run.summary.get("unpriced_models")
    }
    out.attrs.update(
        {
            "baseline": base_name,
            "alpha": alpha,
            "interval": kind,
            "count_errors_as": mode,
            "experiment": exp.name,
            "note": _note(base_name, alpha, kind, len(others)) + _unpriced_note(unpriced),
            "unpriced": unpriced,
            "changes": changes.to_dict("records"),
        }
    )
    return out


def _unpriced_note(unpriced: dict[str, list[str]]) -> str:
    """Which variants' cost is missing, and for want of which model's price."""
    if not unpriced:
        return ""
    parts = [
        f"{name} (no price for {', '.join(map(repr, models))})" for name, models in unpriced.items()
    ]
    return (
        " Cost missing for " + "; ".join(parts) + ": pass prices={model: {'input_mtok': ..., "
        "'output_mtok': ...}}."
    )


def _note(baseline: str, alpha: float, kind: str, tested: int) -> str:
    holm_note = f"Holm-corrected over the {tested} variants" if tested > 1 else "one variant tested"
    return (
        f"pass rate: mean of the per-case pass rates (the agent's failures only); interval: "
        f"{kind}, 95%, over the pooled runs. Two tests against the baseline {baseline!r}, "
        f"Fisher's exact (two-sided), {holm_note}: cases better / cases worse count the cases "
        f"whose own test is beyond noise (p < {alpha:g}); pooled p and pooled: beyond noise "
        f"test all of a variant's runs together. They answer different questions and can "
        f"differ: one case can change beyond noise while the pooled rate does not, and small "
        f"changes over many cases can move the pooled rate with no case beyond noise on its own."
    )


def matrix_frame(exp: Experiment, count_errors_as: str = "failed") -> pd.DataFrame:
    """Pass rate (percent) per case and variant: one row per case in suite order, one column
    per variant, then `spread_pp` (best minus worst variant) and `runs` (counted runs per
    variant, as `passed/runs` text: how much each cell stands on)."""
    mode = counting_mode(count_errors_as)
    stabs = {name: run.stability(count_errors_as=mode) for name, run in exp.runs.items()}
    cases: list[str] = []
    for stab in stabs.values():
        cases += [str(c) for c in stab["case_id"] if str(c) not in cases]
    rates = {
        name: dict(zip(stab["case_id"].astype(str), stab["pass_rate"], strict=True))
        for name, stab in stabs.items()
    }
    counts = {
        name: {
            str(r["case_id"]): f"{int(r['passed'])}/{int(r['runs'])}"
            for r in stab.to_dict("records")
        }
        for name, stab in stabs.items()
    }
    out = pd.DataFrame({"case_id": cases})
    for name in exp.runs:
        out[name] = [float(rates[name].get(c, math.nan)) for c in cases]
    values = out[list(exp.runs)]
    out["spread_pp"] = values.max(axis=1) - values.min(axis=1)
    out["passed/runs"] = [" · ".join(counts[n].get(c, "-") for n in exp.runs) for c in cases]
    out.attrs["variants"] = list(exp.runs)
    out.attrs["count_errors_as"] = mode
    return out
