"""The light row of one case instance behind `Run.df`, `stability()`, `summary` and the cards,
made from its record by `instance_row` alone."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

from convlab.model.records import AssertionResult, CaseResult, TurnResult, Usage

__all__ = [
    "InstanceRow",
    "failed_count",
    "instance_row",
    "tokens_of",
    "usage_tokens",
    "why_not_passed",
]


class InstanceRow(NamedTuple):
    """One instance's `Run.df` row: its key, verdict, why it did not pass, and counts."""

    case_id: str
    variant: str
    """The variant ids joined, `step=variant,...` (empty when none)."""
    repetition: int
    run: int
    status: str
    reward: float
    duration_ms: float
    turns: int
    error: str
    """Why it did not pass (`why_not_passed`); empty for a pass."""
    code: str
    """Its stable code (`CaseResult.code`); empty when it has none."""
    error_location: str
    """Where the user's code raised the exception behind `error` (`my_agent.py:12 in reply`);
    empty when no user code raised."""
    blame: str | None
    assertions: int
    assertions_failed: int
    """Top-level checks that failed or errored."""
    checkpoints: int
    checkpoints_reached: int
    tool_calls: int
    attempts: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    """The agent's token usage (prompt, completion, both)."""
    agent_tokens: int
    simulator_tokens: int
    judge_tokens: int
    """Total tokens of the model calls by role (`CaseResult.spend`)."""
    cost_usd: float
    """What the instance's model calls cost in US dollars (agent, simulator and judge); 0.0
    when none reported usage, NaN when a model that did has no price."""
    started_at: str | None
    finish_reason: str | None

    @property
    def key(self) -> tuple[str, str, int, int]:
        """The instance key: (case id, variant label, repetition, run index)."""
        return (self.case_id, self.variant, self.repetition, self.run)


def instance_row(r: CaseResult) -> InstanceRow:
    """The `Run.df` row of one result (its counts in one pass over its turns)."""
    checks = failed = calls = 0
    for t in r.turns:
        checks += len(t.assertions)
        failed += failed_count(t.assertions)
        if t.observation is not None:
            calls += len(t.observation.tool_calls)
    prompt, completion, total = usage_tokens(r)
    by_role = {"agent": 0, "simulator": 0, "judge": 0}
    cost = 0.0
    for spent in r.spend:
        by_role[spent.role] += spent.total_tokens
        cost += math.nan if spent.cost_usd is None else spent.cost_usd
    return InstanceRow(
        *r.key,
        status=r.status,
        reward=r.reward,
        duration_ms=r.duration_ms,
        turns=len(r.turns),
        error=why_not_passed(r),
        code=r.code or "",
        error_location=r.error_info.location if r.error_info is not None else "",
        blame=r.blame,
        assertions=checks + len(r.assertions),
        assertions_failed=failed + failed_count(r.assertions),
        checkpoints=len(r.checkpoints),
        checkpoints_reached=sum(cp.reached for cp in r.checkpoints),
        tool_calls=calls,
        attempts=r.attempts,
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        agent_tokens=by_role["agent"],
        simulator_tokens=by_role["simulator"],
        judge_tokens=by_role["judge"],
        cost_usd=cost,
        started_at=r.started_at,
        finish_reason=r.finish_reason,
    )


def failed_count(checks: list[AssertionResult]) -> int:
    """How many of `checks` failed or errored."""
    return sum(a.status in ("failed", "error") for a in checks) if checks else 0


def _all_assertions(r: CaseResult) -> Iterator[AssertionResult]:
    """Top-level assertion results of an instance: each turn's, then the case's."""
    for t in r.turns:
        yield from t.assertions
    yield from r.assertions


def _assertion_reason(a: AssertionResult) -> str:
    """Why one assertion did not pass, in one line."""
    if a.error:
        return a.error
    if a.message:
        return a.message
    for child in a.children:
        if not child.passed and child.status != "skipped":
            return _assertion_reason(child)
    name = a.label or a.id or a.kind
    return f"{name} failed: expected {a.expected!r}, got {a.actual!r}"


def why_not_passed(r: CaseResult) -> str:
    """The error, or the first failed assertion's message (then checkpoint, turn); '' if passed."""
    if r.status == "passed":
        return ""
    if r.error:
        return r.error
    for a in _all_assertions(r):
        if a.status in ("failed", "error"):
            return _assertion_reason(a)
    for cp in r.checkpoints:
        if cp.required and not cp.passed:
            return cp.message or f"checkpoint {cp.id} not reached"
    for t in r.turns:
        if t.error:
            return t.error
    return r.finish_reason or r.status


def usage_tokens(r: CaseResult) -> tuple[int, int, int]:
    """Token usage of an instance: its own record, else the sum over its turns."""
    return tokens_of(r.usage, r.turns)


def tokens_of(usage: Usage | None, turns: list[TurnResult]) -> tuple[int, int, int]:
    """`usage_tokens` of a result's `usage` and `turns`."""
    if usage is not None:
        return (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    prompt = completion = total = 0
    for t in turns:
        used = t.observation.usage if t.observation is not None else None
        if used is not None:
            prompt += used.prompt_tokens
            completion += used.completion_tokens
            total += used.total_tokens
    return (prompt, completion, total)
