"""HoloDeck code graders: the `grader` kind and its GraderContext / GraderResult contract.

A grader is `pkg.module:callable`, called once per turn with a frozen GraderContext.
It returns True/False (score 1/0), a number (the score; it passes at or above the
threshold, 0.5 by default) or a GraderResult(score, passed=None, reason=None, details=None).
Anything else, or an exception, is an `error` result (`fail_on_error: true` is recorded
in the details so the engine can stop the case).

Example:
    >>> from convlab.checks import GraderContext, GraderResult
    >>> def exact(ctx: GraderContext) -> GraderResult:
    ...     return GraderResult(score=float(ctx.agent_response == ctx.ground_truth))
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from convlab._user_code import call_user, import_callable
from convlab.checks._core import CheckContext, error_result, kind, result, skipped_result
from convlab.checks._values import reply_text
from convlab.checks.tools import holodeck_arguments
from convlab.model.assertions import Grader
from convlab.model.blame import blame_of
from convlab.model.records import AssertionResult
from convlab.model.tracebacks import error_info, error_text

__all__ = ["GraderContext", "GraderResult", "ToolInvocation", "grader", "grader_context"]


@dataclass(frozen=True)
class ToolInvocation:
    """One tool call a grader sees (HoloDeck's ToolInvocation)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        """The same as `args` (convlab's spelling)."""
        return self.args


@dataclass(frozen=True)
class GraderContext:
    """What a code grader reads about one turn; frozen, collections are tuples."""

    turn_input: str
    agent_response: str
    ground_truth: str | None
    tool_invocations: tuple[ToolInvocation, ...]
    retrieval_context: tuple[str, ...] | None
    turn_index: int
    """0-based."""
    test_case_name: str | None
    turn_config: dict[str, Any] = field(default_factory=dict)
    """The turn's free `turn_config` mapping."""


@dataclass(frozen=True)
class GraderResult:
    """A grader's structured answer; `passed=None` lets the threshold decide."""

    score: float
    passed: bool | None = None
    reason: str | None = None
    details: dict[str, Any] | None = None


def grader_context(spec: Grader, ctx: CheckContext) -> GraderContext:
    """Build the GraderContext of the turn `ctx` describes."""
    case = ctx.case
    turn = None
    if case is not None and case.mode == "turns" and 0 <= ctx.turn_index < len(case.turns):
        turn = case.turns[ctx.turn_index]
    users = [m for m in ctx.messages if m.role == "user"]
    text = ctx.input.text if ctx.input is not None else (users[-1].text() if users else "")
    calls = tuple(
        ToolInvocation(c.name, holodeck_arguments(c.arguments), c.result, c.error)
        for c in ctx.observation.tool_calls
    )
    truth = (
        spec.ground_truth
        if spec.ground_truth is not None
        else (turn.ground_truth if turn else None)
    )
    context = turn.retrieval_context if turn is not None else None
    return GraderContext(
        turn_input=text,
        agent_response=reply_text(ctx.observation),
        ground_truth=truth,
        tool_invocations=calls,
        retrieval_context=tuple(context) if context is not None else None,
        turn_index=ctx.turn_index,
        test_case_name=(case.name or case.id) if case is not None else None,
        turn_config=dict(turn.config) if turn is not None else {},
    )


def _normalize(raw: Any) -> GraderResult | None:
    if isinstance(raw, GraderResult):
        return raw
    if isinstance(raw, bool):
        return GraderResult(score=float(raw), passed=raw)
    if isinstance(raw, int | float):
        return GraderResult(score=float(raw))
    score = getattr(raw, "score", None)  # HoloDeck's own GraderResult, duck-typed
    if isinstance(score, int | float) and not isinstance(score, bool):
        return GraderResult(
            float(score),
            getattr(raw, "passed", None),
            getattr(raw, "reason", None),
            getattr(raw, "details", None),
        )
    return None


def _import_grader(reference: str) -> Any:
    """Import the grader, with the agent.yaml folder its suite resolved it from importable
    while importing only (loading found it by path and ran nothing)."""
    import importlib
    import sys

    from convlab.formats._yaml_metrics import grader_home

    home = grader_home(reference)
    added = home is not None and home not in sys.path
    if added:
        sys.path.insert(0, str(home))
    try:
        importlib.invalidate_caches()
        return import_callable(reference)
    finally:
        if added and home in sys.path:
            sys.path.remove(str(home))


@kind("grader")
async def grader(spec: Grader, ctx: CheckContext) -> AssertionResult:
    """A code grader `pkg.module:callable` scores the turn (HoloDeck `type: code`).

    It gets a GraderContext (turn_input, agent_response, ground_truth, tool_invocations,
    retrieval_context, turn_index, test_case_name, turn_config) and returns a bool, a
    number or a GraderResult. Passes at or above `threshold` (0.5 without one) unless the
    GraderResult says `passed`. A grader that raises or returns anything else is an error.
    On a multi-turn turn with an empty reply no grader runs (HoloDeck's `_run_evaluations`
    runs nothing on an empty reply), as no metric does.
    """
    base = {"grader": spec.grader, "fail_on_error": spec.fail_on_error}
    if ctx.multi_turn and reply_text(ctx.observation) == "":
        return skipped_result(spec, "the reply is empty: no grader runs on an empty turn")
    try:
        fn = _import_grader(spec.grader)
    except ImportError as exc:
        return error_result(spec, f"cannot import grader {spec.grader!r}: {exc}", details=base)
    except (Exception, SystemExit) as exc:  # the module's own top-level code failed
        msg = f"cannot import grader {spec.grader!r}: {error_text(exc)}"
        return error_result(spec, msg, details=base)
    gctx = grader_context(spec, ctx)
    try:
        raw = await call_user(fn, gctx)
    except Exception as exc:
        why = error_text(exc)
        info = error_info(exc)
        return error_result(spec, why, blame_of(exc, "suite"), details=base, error_info=info)
    graded = _normalize(raw)
    if graded is None:
        msg = (
            f"grader returned unsupported type {type(raw).__name__};"
            " expected bool, float, or GraderResult"
        )
        return error_result(spec, msg, details=base)
    details = {**base, **({"grader_details": graded.details} if graded.details is not None else {})}
    try:
        json.dumps(graded.details)
    except (TypeError, ValueError) as exc:
        return error_result(spec, f"details not JSON-serializable: {exc}", details=base)
    threshold = 0.5 if spec.threshold is None else spec.threshold
    passed = graded.passed if graded.passed is not None else graded.score >= threshold
    msg = graded.reason or f"grader scored {graded.score:g} (threshold {threshold:g})"
    return result(
        spec,
        bool(passed),
        msg,
        expected=gctx.ground_truth,
        actual=gctx.agent_response,
        score=graded.score,
        details=details,
    )
