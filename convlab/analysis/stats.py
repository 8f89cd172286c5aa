"""Statistics over run frames: stability, pass^k / pass@k, intervals, summaries.

Pure functions over DataFrames shaped like `Run.df` (one row per case instance with
`case_id`, `variant`, `status`, `duration_ms`). How a status counts, in every function here:

- `passed` is a pass; `failed` and `timeout` are runs that did not pass;
- `error` is a run that did not pass (`count_errors_as="failed"`, the default) or is left out
  (`count_errors_as="excluded"`); it is never a pass, and the choice is written in the output;
- only the agent's failures count against the agent: an instance that did not pass because of
  the simulator, the judge, the infrastructure, the suite or a hook (its `blame`, see
  convlab.model.blame) is not a run; it is counted apart, in `not_agent` (by class in
  `not_agent_blame`). A frame without a `blame` column counts every failure as the agent's;
- `skipped`, `blocked` and `cancelled` never ran to a verdict: they are never counted as runs.

Each system's figures are here in its own terms: Yao's stability classes (`classification`,
with a Wilson score interval), and beside them `stability`, the class every view shows, which
never calls a case that always fails unstable (convlab.analysis._classes); thinkingbox's
(`tb agg`, cli/agg_main.py) pass^k = (c/n)^k on the k grid {1, 5, 10, 20, 50, 100}, Jeffreys
credible interval and goldilocks-zone probability (`convlab.analysis._intervals`).

Run-to-run comparison lives in `convlab.analysis.compare` and is re-exported here as `compare`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from convlab.analysis._classes import (
    CLASSES,
    STABILITY,
    VERDICTS,
    classify,
    stability_word,
    verdict,
)
from convlab.analysis._intervals import (
    GOLDILOCKS,
    INTERVALS,
    interval_kind,
    interval_of,
    jeffreys,
    prob_in_zone,
    wilson,
)
from convlab.analysis.significance import fisher_exact, holm
from convlab.model.blame import BLAMED_STATUSES, blame_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CLASSES",
    "GOLDILOCKS",
    "INTERVALS",
    "PASS_K_GRID",
    "STABILITY",
    "STABILITY_COLUMNS",
    "VERDICTS",
    "CountErrorsAs",
    "Tally",
    "case_row",
    "classify",
    "counting_mode",
    "counts_as_run",
    "fisher_exact",
    "holm",
    "interval_of",
    "jeffreys",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_table",
    "pass_pow_k",
    "prob_in_zone",
    "stability",
    "stability_row",
    "stability_word",
    "summary",
    "tally",
    "tally_rows",
    "verdict",
    "wilson",
]

CountErrorsAs = Literal["failed", "excluded"]
PASS_K_GRID = (1, 5, 10, 20, 50, 100)
"""thinkingbox's k values for pass^k and pass@k (`PASS_METRICS_K`, cli/agg_main.py)."""
IN_ZONE_AT = 0.95
"""`in_goldilocks_zone` when P(0.0625 < p < 0.9375 | data) reaches this (`tb agg`'s GZ@95%)."""
EXCLUDED_STATUSES = frozenset({"skipped", "blocked", "cancelled"})

STABILITY_COLUMNS = (
    "case_id",
    "runs",
    "passed",
    "failed",
    "errors",
    "timeouts",
    "skipped",
    "cancelled",
    "not_agent",
    "not_agent_blame",
    "pass_rate",
    "classification",
    "verdict",
    "stability",
    "flaky",
    "paths",
    "main_path_share",
    "k",
    "pass_hat_k",
    "pass_pow_k",
    "pass_at_k",
    "ci_low",
    "ci_high",
    "interval",
    "p_in_zone",
    "in_goldilocks_zone",
    "duration_mean_ms",
    "duration_min_ms",
    "duration_max_ms",
    "duration_std_ms",
    "errors_counted_as",
)


def _check_k(n: int, c: int, k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"passes must be between 0 and runs ({n}), got {c}")


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that k fresh trials ALL pass, unbiased from c passes in n runs: C(c,k)/C(n,k).

    NaN when k > n (n runs cannot estimate it).
    """
    _check_k(n, c, k)
    return math.nan if k > n else math.comb(c, k) / math.comb(n, k)


def pass_pow_k(n: int, c: int, k: int) -> float:
    """thinkingbox's pass^k: (c/n)^k, deliberately biased (`pass_power_k`, cli/agg_main.py).

    Unlike C(c,k)/C(n,k) it stays above zero when c < k, so hard cases still differ; and it is
    defined for k > n. 0.0 when n == 0, as in thinkingbox.
    """
    _check_k(n, c, k)
    return 0.0 if n == 0 else (c / n) ** k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k trials passes: 1 - C(n-c,k)/C(n,k); NaN when k > n."""
    _check_k(n, c, k)
    return math.nan if k > n else 1 - math.comb(n - c, k) / math.comb(n, k)


_NONE: dict[str, int] = {}
_NO_DURATIONS: list[tuple[str, float]] = []
"""Shared by the Tallies with nothing counted apart, or no durations kept: never written."""


class Tally:
    """Counts of one group of instances, split the way this module counts them."""

    __slots__ = (
        "cancelled",
        "durations",
        "errors",
        "failed",
        "not_agent",
        "passed",
        "skipped",
        "timed",
        "timeouts",
    )

    def __init__(self, timed: bool = True) -> None:
        self.passed = self.failed = self.errors = self.timeouts = 0
        self.skipped = self.cancelled = 0
        self.not_agent: dict[str, int] = _NONE
        """Instances that did not pass through no fault of the agent, by blame."""
        self.timed = timed  # a summary does without the durations: less to hold
        self.durations: list[tuple[str, float]] = [] if timed else _NO_DURATIONS

    def add(self, status: str, duration_ms: float, blame: Any = None) -> None:
        """Count one instance; a non-pass blamed on anything but the agent is counted apart."""
        if status in BLAMED_STATUSES and isinstance(blame, str) and blame != "agent":
            if self.not_agent is _NONE:
                self.not_agent = {}
            self.not_agent[blame] = self.not_agent.get(blame, 0) + 1
            if self.timed:
                self.durations.append(("not_agent", duration_ms))
            return
        if status == "passed":
            self.passed += 1
        elif status == "failed":
            self.failed += 1
        elif status == "error":
            self.errors += 1
        elif status == "timeout":
            self.timeouts += 1
        elif status == "cancelled":
            self.cancelled += 1
        else:  # skipped, blocked
            self.skipped += 1
        if self.timed:
            self.durations.append((status, duration_ms))

    def runs(self, count_errors_as: CountErrorsAs) -> int:
        """Instances that reached a verdict and count towards the pass rate."""
        counted_errors = self.errors if count_errors_as == "failed" else 0
        return self.passed + self.failed + self.timeouts + counted_errors

    def counted_durations(self, count_errors_as: CountErrorsAs) -> list[float]:
        """Durations of the counted runs only."""
        left_out = {*EXCLUDED_STATUSES, "not_agent"}
        if count_errors_as == "excluded":
            left_out.add("error")
        return [d for s, d in self.durations if s not in left_out]


def counts_as_run(status: str, blame: Any, mode: CountErrorsAs) -> bool:
    """Whether an instance is one of its case's runs (`Tally.runs`): a verdict of the agent's
    (a non-pass blamed on anything else is not), an error only when errors count as failed."""
    if status in BLAMED_STATUSES and isinstance(blame, str) and blame != "agent":
        return False
    return status in ("passed", "failed", "timeout") or (status == "error" and mode == "failed")


def counting_mode(count_errors_as: str) -> CountErrorsAs:
    """Validate a `count_errors_as` setting ('failed' or 'excluded')."""
    if count_errors_as not in ("failed", "excluded"):
        raise ValueError(f"count_errors_as must be 'failed' or 'excluded', got {count_errors_as!r}")
    return "failed" if count_errors_as == "failed" else "excluded"


def tally(
    df: pd.DataFrame, by: Sequence[str] = ("case_id",), order: Iterable[str] | None = None
) -> dict[tuple[str, ...], Tally]:
    """Group instance rows by `by` columns; keys come in `order` (case ids), then as first seen.

    Uses the `blame` column when the frame has one (else every failure is the agent's)."""
    cols = [*by, "status", "duration_ms"]
    if "blame" in df.columns:
        rows: Iterable[tuple[Any, ...]] = df[[*cols, "blame"]].itertuples(index=False, name=None)
    else:
        rows = ((*row, None) for row in df[cols].itertuples(index=False, name=None))
    return tally_rows(rows, len(by), order)


def tally_rows(
    rows: Iterable[tuple[Any, ...]],
    n_keys: int = 1,
    order: Iterable[str] | None = None,
    timed: bool = True,
) -> dict[tuple[str, ...], Tally]:
    """`tally` over plain `(*key, status, duration_ms, blame)` tuples: no DataFrame needed, so
    a summary of a large run costs one pass over its results (`timed=False`: without the
    durations, which a summary does not show)."""
    groups: dict[tuple[str, ...], Tally] = {}
    for row in rows:
        key = (str(row[0]),) if n_keys == 1 else tuple(str(v) for v in row[:n_keys])
        tally = groups.get(key)
        if tally is None:
            tally = groups[key] = Tally(timed)
        tally.add(str(row[n_keys]), float(row[n_keys + 1]), row[-1])
    rank = {cid: i for i, cid in enumerate(order or ())}
    first = {key: i for i, key in enumerate(groups)}
    ordered = sorted(groups, key=lambda key: (rank.get(key[0], len(rank)), first[key]))
    return {key: groups[key] for key in ordered}


def _spread(durations: list[float]) -> tuple[float, float, float, float]:
    """Mean, min, max and POPULATION standard deviation (divide by N, as Yao does)."""
    if not durations:
        return (math.nan, math.nan, math.nan, math.nan)
    mean = sum(durations) / len(durations)
    var = sum((d - mean) ** 2 for d in durations) / len(durations)
    return (mean, min(durations), max(durations), math.sqrt(var))


def case_row(t: Tally, mode: CountErrorsAs) -> dict[str, Any]:
    """A case's counts, pass rate, class and flakiness: what a summary needs, cheaply."""
    n, c = t.runs(mode), t.passed
    rate = 100 * c / n if n else math.nan
    return {
        "runs": n,
        "passed": c,
        "failed": t.failed,
        "errors": t.errors,
        "timeouts": t.timeouts,
        "skipped": t.skipped,
        "cancelled": t.cancelled,
        "not_agent": sum(t.not_agent.values()),
        "not_agent_blame": blame_text(t.not_agent),
        "pass_rate": rate,
        "classification": classify(rate),
        "verdict": verdict(n, c),
        "stability": stability_word(n, c),
        "flaky": 0 < c < n,
    }


def stability_row(
    t: Tally, k: int | None, mode: CountErrorsAs, interval: str = "wilson"
) -> dict[str, Any]:
    """One case's row of the stability table: `case_row` plus pass^k, the interval, durations."""
    row = case_row(t, mode)
    n, c = row["runs"], row["passed"]
    kk = k if k is not None else n
    low, high = interval_of(c, n, interval)
    zone = prob_in_zone(c, n) if n else math.nan
    mean, lo, hi, std = _spread(t.counted_durations(mode))
    return {
        **row,
        "k": kk,
        "pass_hat_k": pass_hat_k(n, c, kk) if n and kk else math.nan,
        "pass_pow_k": pass_pow_k(n, c, kk) if n and kk else math.nan,
        "pass_at_k": pass_at_k(n, c, kk) if n and kk else math.nan,
        "ci_low": 100 * low,
        "ci_high": 100 * high,
        "interval": interval,
        "p_in_zone": zone,
        # a case with no counted run is not "in" the zone: thinkingbox's prior alone would say 0.87
        "in_goldilocks_zone": bool(n) and zone >= IN_ZONE_AT,
        "duration_mean_ms": mean,
        "duration_min_ms": lo,
        "duration_max_ms": hi,
        "duration_std_ms": std,
        "errors_counted_as": mode,
    }


def stability(
    df: pd.DataFrame,
    k: int | None = None,
    count_errors_as: str = "failed",
    order: Iterable[str] | None = None,
    by_variant: bool = False,
    interval: str = "wilson",
    paths: Mapping[tuple[str, ...], tuple[int, float]] | None = None,
) -> pd.DataFrame:
    """One row per case (per case and variant with `by_variant`): Yao's stability table,
    with thinkingbox's figures beside it.

    `runs` = passed + failed + timeouts (+ errors when counted as failed), all of them the
    agent's (blame `agent`); a non-pass blamed on anything else is in `not_agent` instead, and
    skipped, blocked and cancelled instances are never runs. `pass_rate`, `ci_low`, `ci_high`
    are percent; `ci_*` is the `interval` ("wilson" or thinkingbox's "jeffreys"). `pass_hat_k`
    (unbiased C(c,k)/C(n,k)), `pass_pow_k` (thinkingbox's (c/n)^k) and `pass_at_k` use `k`
    (default: the case's runs, so pass^k is 1 only when every run passed). `p_in_zone` is
    thinkingbox's P(0.0625 < p < 0.9375 | data), `in_goldilocks_zone` when it is >= 0.95.
    `flaky` marks cases whose runs disagree; durations cover the counted runs. `paths` (the
    distinct trajectories of a case's runs) and `main_path_share` (the share of its runs on
    the most common one) come from `paths`, keyed like the rows (convlab.analysis.divergence
    computes them from the records); without it, or for a case with no counted run, they
    are 0 and NaN.
    """
    import pandas as pd

    mode = counting_mode(count_errors_as)
    kind = interval_kind(interval)
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    by = ("case_id", "variant") if by_variant else ("case_id",)
    ways = paths or {}
    rows = [
        {
            **dict(zip(by, key, strict=True)),
            **stability_row(t, k, mode, kind),
            **dict(zip(("paths", "main_path_share"), ways.get(key, (0, math.nan)), strict=True)),
        }
        for key, t in tally(df, by, order).items()
    ]
    columns = [*by, *STABILITY_COLUMNS[1:]]
    out = pd.DataFrame.from_records(rows, columns=columns)
    out.attrs["count_errors_as"] = mode
    out.attrs["interval"] = kind
    out.attrs["note"] = _counting_note(mode)
    return out


def _counting_note(mode: CountErrorsAs) -> str:
    errors = "errors count as failed runs" if mode == "failed" else "errors are left out"
    return (
        f"pass rate = passed / runs; only the agent's failures are runs ({errors}); "
        "failures blamed on the simulator, judge, infrastructure, suite or a hook are counted "
        "apart (not_agent); skipped, blocked and cancelled instances are not runs"
    )


def pass_k_table(
    df: pd.DataFrame,
    ks: Iterable[int] | None = None,
    count_errors_as: str = "failed",
    order: Iterable[str] | None = None,
) -> pd.DataFrame:
    """pass^k and pass@k per case for several k, one row per (case, k) (tidy, easy to plot).

    `ks` defaults to thinkingbox's grid {1, 5, 10, 20, 50, 100} up to the most runs any case
    has (`tb agg` reports k <= runs only); a k above a case's runs gives NaN for the unbiased
    figures. `pass_pow_k` is thinkingbox's (c/n)^k; the mean of a k's rows over the cases is
    `tb agg`'s suite figure.
    """
    import pandas as pd

    mode = counting_mode(count_errors_as)
    groups = tally(df, ("case_id",), order)
    counts = [(key[0], t.runs(mode), t.passed) for key, t in groups.items()]
    most = max((n for _, n, _ in counts), default=0)
    wanted = list(ks) if ks is not None else [k for k in PASS_K_GRID if k <= most]
    rows = [
        (
            cid,
            n,
            c,
            k,
            pass_hat_k(n, c, k) if n else math.nan,
            pass_pow_k(n, c, k) if n and k <= n else math.nan,
            pass_at_k(n, c, k) if n else math.nan,
        )
        for cid, n, c in counts
        for k in wanted
    ]
    cols = ["case_id", "runs", "passed", "k", "pass_hat_k", "pass_pow_k", "pass_at_k"]
    out = pd.DataFrame.from_records(rows, columns=cols)
    out.attrs["count_errors_as"] = mode
    return out


def summary(df: pd.DataFrame, stab: pd.DataFrame) -> dict[str, Any]:
    """Totals by status (one per instance) and the stability roll-up, as a plain dict.

    `pass_rate` is the unweighted mean of the per-case pass rates (Yao's overall rate),
    in percent; None when no case has a counted run. `count_errors_as` says how errors counted.
    """
    from convlab.analysis.rollup import summary_of

    mode = counting_mode(stab.attrs.get("count_errors_as", "failed"))
    rows = [{str(k): v for k, v in row.items()} for row in stab.to_dict("records")]
    blames = list(df["blame"]) if "blame" in df.columns else None
    return summary_of([str(s) for s in df["status"]], rows, mode, blames)
