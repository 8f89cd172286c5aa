"""A run's roll-up: its summary, each case's row and the reasons it did not pass, made in one
pass over its results that holds no row of them (the views of a finished run read the one
kept with it: `convlab.analysis.frames.run_rollup`)."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from convlab.analysis._classes import CLASSES, STABILITY
from convlab.analysis._intervals import jeffreys
from convlab.analysis.frames import instance_rows, suite_order, unpriced_models
from convlab.analysis.stats import (
    CountErrorsAs,
    Tally,
    case_row,
    counting_mode,
    tally_rows,
)
from convlab.model.blame import count_by_blame
from convlab.model.results import Results
from convlab.model.rows import InstanceRow, instance_row
from convlab.model.run import Run

__all__ = ["CaseRows", "Rollup", "rollup", "summary_of"]


class CaseRows(Mapping[str, dict[str, Any]]):
    """Each case's `case_row` (counts, pass rate, class), in suite order, made when read from
    the case's counts: a roll-up kept with a big run holds a few counters per case, not a
    row of text."""

    __slots__ = ("_mode", "_tallies")

    def __init__(self, tallies: dict[str, Tally], mode: CountErrorsAs) -> None:
        self._tallies, self._mode = tallies, mode

    def __getitem__(self, case_id: str) -> dict[str, Any]:
        return case_row(self._tallies[case_id], self._mode)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tallies)

    def __len__(self) -> int:
        return len(self._tallies)


class Rollup(NamedTuple):
    """A run's summary and per-case roll-up, from one pass (kept with a finished run)."""

    summary: dict[str, Any]
    """`Run.summary`'s figures."""
    cases: CaseRows
    """Each case's `case_row` (counts, pass rate, class), in suite order."""
    reasons: dict[str, tuple[str, str]]
    """Each case's first failure blamed on the agent: its error, and where the user's code
    raised it ('' when none did)."""


def _each_latest(run: Run, repeated: list[bool]) -> Iterator[InstanceRow]:
    """Every result's row, one at a time, none kept; it stops and sets `repeated[0]` when a
    key comes again (a result recorded again, or two keys with one hash: then only the latest
    of its rows may count, and `instance_rows` decides)."""
    results = run.results
    rows = results.each_row() if isinstance(results, Results) else map(instance_row, results)
    seen: set[int] = set()
    for row in rows:
        key = hash(row.key)
        if key in seen:
            repeated[0] = True
            return
        seen.add(key)
        yield row


def rollup(run: Run, count_errors_as: str = "failed") -> Rollup:
    """The summary (totals by status of the latest record per instance, the stability
    roll-up, the tokens and cost of the model calls), each case's row and reasons, in one
    pass over the results that holds no row of them (a run with an instance recorded twice
    is read from its latest rows instead)."""
    repeated = [False]
    made = _rollup(run, _each_latest(run, repeated), count_errors_as)
    return _rollup(run, instance_rows(run), count_errors_as) if repeated[0] else made


def _rollup(run: Run, latest: Iterable[InstanceRow], count_errors_as: str) -> Rollup:
    """The roll-up of the latest rows, read once, in any order."""
    mode = counting_mode(count_errors_as)
    statuses: list[str] = []
    blames: list[str | None] = []
    costs: list[float] = []
    tokens = {"agent": 0, "simulator": 0, "judge": 0}
    reasons: dict[str, tuple[str, str]] = {}
    order = suite_order(run)
    ids = {cid: cid for cid in order}  # the suite's own strings, not one decoded per row
    intern = sys.intern

    def each() -> Iterator[tuple[str, str, float, str | None]]:
        for r in latest:
            cid = ids.get(r.case_id, r.case_id)
            status, blame = intern(r.status), None if r.blame is None else intern(r.blame)
            statuses.append(status)
            blames.append(blame)
            if r.cost_usd != 0.0:  # NaN too: it makes the cost unknown
                costs.append(r.cost_usd)
            tokens["agent"] += r.agent_tokens
            tokens["simulator"] += r.simulator_tokens
            tokens["judge"] += r.judge_tokens
            if blame == "agent" and cid not in reasons:  # the pass rate counts the agent's
                reasons[cid] = (r.error, r.error_location)  # failures: so do the reasons
            yield (cid, status, r.duration_ms, blame)

    cases = CaseRows({k[0]: t for k, t in tally_rows(each(), 1, order, timed=False).items()}, mode)
    summary = summary_of(statuses, cases.values(), mode, blames)
    cost = math.fsum(costs)
    summary["cost_usd"] = None if math.isnan(cost) else cost
    summary["tokens"] = tokens
    summary["unpriced_models"] = unpriced_models(run) if math.isnan(cost) else []
    return Rollup(summary, cases, reasons)


def _count_statuses(statuses: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    keys = (
        ("passed", "passed"),
        ("failed", "failed"),
        ("errors", "error"),
        ("skipped", "skipped"),
        ("timeouts", "timeout"),
        ("cancelled", "cancelled"),
        ("blocked", "blocked"),
    )
    return {"total": len(statuses), **{name: counts.get(status, 0) for name, status in keys}}


def summary_of(
    statuses: Sequence[str],
    case_rows: Iterable[Mapping[str, Any]],
    mode: CountErrorsAs,
    blames: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """`summary` from the instances' statuses (and blames, in the same order) and the
    stability rows (`stability_row`), read once (a generator of them holds one at a time).
    `classes` counts the cases by Yao's class, `stability` by the word the views show; `blame`
    counts the non-passes by class; `not_agent` is how many of them the pass rate leaves out."""
    by_blame = count_by_blame(statuses, blames)
    classes, words = dict.fromkeys(CLASSES, 0), dict.fromkeys(STABILITY, 0)
    cases = runs = passes = flaky = 0
    rates: list[float] = []  # the rated cases' (a run or more)
    for cases, r in enumerate(case_rows, 1):  # noqa: B007 - the count is kept
        if r["runs"] > 0:
            for counts, name in ((classes, r["classification"]), (words, r.get("stability"))):
                if name in counts:
                    counts[name] += 1
            rates.append(float(r["pass_rate"]))
            runs, passes, flaky = (
                runs + int(r["runs"]),
                passes + int(r["passed"]),
                flaky + r["flaky"],
            )
    rated = len(rates)
    mean = sum(rates) / rated if rated else None
    low, high = jeffreys(passes, runs) if runs else (math.nan, math.nan)
    return {
        **_count_statuses(statuses),
        "pass_rate": mean,
        # thinkingbox's `mean_pass`: every counted run weighs the same (pass_rate weighs every
        # case the same), with its Jeffreys 95% credible interval (`cred_int`); percent here
        "mean_pass": 100 * passes / runs if runs else None,
        "mean_pass_ci_low": 100 * low if runs else None,
        "mean_pass_ci_high": 100 * high if runs else None,
        "cases": cases,
        "rated_cases": rated,
        "stable_cases": classes["stable"],
        "unstable_cases": rated - classes["stable"],
        "flaky_cases": flaky,
        "classes": classes,
        # what the views show: the same cases by `stability` (always-failing apart)
        "stability": words,
        "count_errors_as": mode,
        "blame": by_blame,
        "not_agent": sum(n for b, n in by_blame.items() if b != "agent"),
    }
