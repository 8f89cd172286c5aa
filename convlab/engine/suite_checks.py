"""Suite-scope checks: they read the run's `summary` (intention-kernel's nine counts) and
every case result, once all instances have ended."""

from __future__ import annotations

from typing import Any

from convlab.checks import CheckContext, evaluate
from convlab.model.records import CaseResult
from convlab.model.run import Run

__all__ = ["SUMMARY_KEYS", "suite_checks", "suite_summary"]


async def suite_checks(run: Run) -> list[Any]:
    """Suite-scope assertions see `{summary, status}` (intention-kernel) and every case result."""
    summary = suite_summary(list(run.results))
    ctx = CheckContext(
        scope="suite", summary=summary, cases=list(run.results), extra={"status": run.status}
    )
    assert run.suite is not None
    return [await evaluate(spec, ctx) for spec in run.suite.assertions]


SUMMARY_KEYS = (
    "total",
    "pending",
    "running",
    "passed",
    "failed",
    "error",
    "skipped",
    "blocked",
    "cancelled",
)
"""intention-kernel's report summary (runner.ts `count`): exactly these nine keys."""


def suite_summary(results: list[CaseResult]) -> dict[str, int]:
    """The `summary` suite assertions read, with exactly intention-kernel's nine keys.

    Decision: a convlab `timeout` counts as `error`, as the kernel makes a deadline
    (EVALUATION_TIMEOUT) a turn error and so a case error; it is no key of its own.
    """
    summary = dict.fromkeys(SUMMARY_KEYS, 0)
    summary["total"] = len(results)
    for r in results:
        summary["error" if r.status == "timeout" else r.status] += 1
    return summary
