"""Stable result codes: why a turn or a case instance erred, was blocked, timed out or stopped.

The codes are intention-kernel's (src/testing/evaluation/*.ts @923d4314: the turn and case
`errorCode`, the assertion `errorCode`), so a JSON suite's results read as the kernel's
report does. Every other format gets the same codes as the nearest equivalent: an agent
that raises is a transport failure whatever the format, a Python test that crashes is an
evaluator failure. A pass, a plain failure and a skip carry no code (the kernel sets none).

Messages keep the code first (`CODE: why`) where a person reads them; `code_in` gets it back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from convlab.model.records import AssertionResult, CaseResult, TurnResult
from convlab.model.tracebacks import message_of

__all__ = ["CODES", "assertion_code", "case_code", "code_in", "error_code", "turn_code"]

CODES: dict[str, str] = {
    "EVALUATION_TRANSPORT_FAILED": "the agent raised (or its transport failed) during a turn",
    "EVALUATION_AGENT_INPUT_INVALID": "a strict_input agent got an input not {text, selection?}",
    "EVALUATION_SELECTION_UNAVAILABLE": "a selection with no open interaction (or one without id)",
    "EVALUATION_SELECTION_AMBIGUOUS": "a selection that matches no option, or several",
    "EVALUATION_TIMEOUT": "the instance outlasted its timeout",
    "EVALUATION_CANCELLED": "the run was stopped before or while the instance ran",
    "EVALUATION_SESSION_FAILED": "the instance could not start (before hook, agent session)",
    "EVALUATION_CLEANUP_FAILED": "the after hook failed",
    "EXTERNAL_WRITES_NOT_AUTHORIZED": "an external-write case in a run that does not allow it",
    "EVALUATOR_NOT_FOUND": "a custom evaluator that is not registered",
    "EVALUATOR_FAILED": "an evaluator (check, judge, grader, Python test) raised",
    "EVALUATOR_RESULT_INVALID": "an evaluator returned no boolean `passed`",
}
"""Every code a result can carry, with what it means (docs/intention-kernel.md)."""

_LEADING = re.compile(r"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+):")


def code_in(text: str | None) -> str | None:
    """The known code a message starts with (`EVALUATION_SELECTION_AMBIGUOUS: ...`), or None."""
    if not text:
        return None
    m = _LEADING.match(text)
    return m.group(1) if m and m.group(1) in CODES else None


def error_code(exc: BaseException) -> str:
    """The code of an agent's exception: its own known code, else a transport failure.

    intention-kernel (runner.ts `runEvaluation`): an EvaluationError keeps its code, any
    other exception from `send` is EVALUATION_TRANSPORT_FAILED.
    """
    own = getattr(exc, "code", None)
    if isinstance(own, str) and own in CODES:
        return own
    return code_in(message_of(exc)) or "EVALUATION_TRANSPORT_FAILED"


def assertion_code(res: AssertionResult) -> str | None:
    """An errored assertion's code: its own, else its first errored child's (the kernel's
    all/any/not pass a child's errorCode up), else EVALUATOR_FAILED. None unless it erred."""
    if res.status != "error":
        return None
    own = res.details.get("code")
    if isinstance(own, str):
        return own
    for child in res.children:
        found = assertion_code(child)
        if found is not None:
            return found
    return code_in(res.error) or "EVALUATOR_FAILED"


def _first(codes: Iterable[str | None]) -> str | None:
    return next((c for c in codes if c is not None), None)


def turn_code(turn: TurnResult) -> str | None:
    """An errored turn's code: set when it erred, else its first errored assertion's."""
    if turn.status != "error":
        return None
    return turn.code or code_in(turn.error) or _first(map(assertion_code, turn.assertions))


def case_code(result: CaseResult) -> str | None:
    """The code of a case instance, derived from what it recorded (runner.ts `executeCase`:
    a blocked case's errorCode, else the erring turn's, else the final assertions').

    Decision: convlab's `timeout` status is the kernel's EVALUATION_TIMEOUT (the kernel
    makes that turn an `error`; convlab keeps its own status and gives the kernel's code).
    """
    status = result.status
    if status in ("passed", "failed", "skipped"):
        return None
    if status == "timeout":
        return "EVALUATION_TIMEOUT"
    if status == "cancelled":
        return "EVALUATION_CANCELLED"
    if status == "blocked":
        return code_in(result.error) or "EXTERNAL_WRITES_NOT_AUTHORIZED"
    found = code_in(result.error) or _first(map(turn_code, result.turns))
    found = found or _first(map(assertion_code, result.assertions))
    if found is not None:
        return found
    error = result.error or ""
    if error.startswith("after hook failed"):
        return "EVALUATION_CLEANUP_FAILED"
    if error.startswith("before hook failed") or not result.turns:
        return "EVALUATION_SESSION_FAILED"
    return "EVALUATOR_FAILED"
