"""A finished instance: its CaseResult, made from what its conversation got to, and its
encoded line (stored, when the run has a store)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from convlab._durations import elapsed_ms
from convlab.engine.codes import case_code
from convlab.engine.conversation import Conversation
from convlab.engine.masking import masked
from convlab.engine.modes import Outcome
from convlab.engine.replies import share_case_text
from convlab.engine.store import ResultStore
from convlab.model.blame import Blame, blame_of
from convlab.model.codec import encode, valid_unicode
from convlab.model.records import AssertionResult, CaseResult, ErrorInfo, TurnResult
from convlab.model.tracebacks import ERROR_BYTES, capped, error_text
from convlab.plan import Instance

__all__ = ["closed", "error_text", "kept", "result_of", "timed_out"]


def result_of(
    inst: Instance, conv: Conversation, outcome: Outcome, started: str, t0: float
) -> CaseResult:
    """The instance's result: its conversation's turns and what its mode concluded."""
    result = CaseResult(
        case_id=inst.case.id,
        variant=dict(inst.variant),
        repetition=inst.repetition,
        run=inst.run,
        status=outcome.status,  # type: ignore[arg-type]
        reward=_reward(outcome),
        turns=list(conv.turns),
        assertions=list(outcome.assertions),
        checkpoints=list(outcome.checkpoints),
        error=capped(outcome.error, ERROR_BYTES) if outcome.error else outcome.error,
        error_info=outcome.error_info or _raised_in(outcome, conv.turns),
        blame=outcome.blame,  # what stopped it; the record settles the instance's blame
        duration_ms=elapsed_ms(t0),
        attempts=conv.attempts.calls or 1,
        usage=conv.usage,
        spend=conv.meter.spend(),
        started_at=started,
        finish_reason=outcome.finish_reason,
    )
    result.code = case_code(result)
    share_case_text(result)  # a long reply is stored once, on its turn
    return result


def _raised_in(outcome: Outcome, turns: list[TurnResult]) -> ErrorInfo | None:
    """For an instance that erred on a turn or a check: the exception behind the first such
    error (the one its `error` names), when user code raised it."""
    if outcome.status != "error":
        return None
    for t in turns:
        if t.status == "error":
            return t.error_info or _in_checks(t.assertions)
    return _in_checks(outcome.assertions)


def _in_checks(checks: list[AssertionResult]) -> ErrorInfo | None:
    for a in checks:
        if a.status == "error":
            return a.error_info or _in_checks(a.children)
    return None


def _reward(outcome: Outcome) -> float:
    if outcome.status != "passed":
        return 0.0
    scores = [
        a.score for a in outcome.assertions if a.kind == "python_test" and a.score is not None
    ]
    return float(scores[0]) if scores else 1.0


def kept(
    store: ResultStore | None, result: CaseResult, secrets: Sequence[str]
) -> tuple[CaseResult, bytes]:
    """The instance as finally recorded, and its encoded line (stored, if there is a store).

    Text that is not Unicode (which an agent's reply cannot bring: it is cleaned where it
    enters) is replaced here; every known secret value (`secrets`: the run's `known_secrets()`,
    read once when it starts) is masked (`masked`); a result the store cannot take becomes an
    `error` saying so."""
    try:
        line = encode(result)
    except UnicodeEncodeError:
        result, _ = valid_unicode(result)
        line = encode(result)
    result, line = masked(result, line, secrets)
    if store is None:
        return result, line
    try:
        store.append(line)
    except Exception as exc:
        why = f"results store {store.path}: could not write this instance ({error_text(exc)})"
        error = f"{result.error}; {why}" if result.error else why
        status = "error" if result.status == "passed" else result.status
        blame = blame_of(exc, "infrastructure")
        result = msgspec.structs.replace(result, status=status, error=error, blame=blame)
        return result, encode(result)
    return result, line


def closed(
    inst: Instance,
    status: str,
    why: str,
    blame: Blame | None = None,
    info: ErrorInfo | None = None,
) -> CaseResult:
    """The result of an instance that did not run (skipped, blocked, cancelled, or stopped
    by the run's before hook, whose exception is `info`)."""
    result = CaseResult(
        case_id=inst.case.id,
        variant=inst.variant,
        repetition=inst.repetition,
        run=inst.run,
        status=status,  # type: ignore[arg-type]
        error=why,
        error_info=info,
        blame=blame,
    )
    result.code = case_code(result)
    return result


def timed_out(conv: Conversation, timeout: float) -> Outcome:
    """The outcome of an instance that ran out of time (its last turn marked, if it waited
    for the agent), saying when the agent blocked the event loop."""
    if conv.turns and conv.turns[-1].observation is None and conv.turns[-1].status != "error":
        conv.turns[-1].status, conv.turns[-1].error = "error", "timeout"
        conv.turns[-1].code = "EVALUATION_TIMEOUT"
    why = f"timeout after {_fmt_duration(timeout)}"
    # an agent call that outlasted the timeout never let the loop run the timeout
    blocked = max((t.duration_ms or 0.0 for t in conv.turns), default=0.0) / 1000
    if blocked > timeout:
        why += (
            f": the agent blocked the event loop for {blocked:.1f}s (a blocking call in "
            "async code: await it, or make the agent a sync function)"
        )
    return Outcome("timeout", why, checkpoints=conv.checkpoints, blame="infrastructure")


def _fmt_duration(seconds: float) -> str:
    if seconds >= 60:
        m, s = divmod(seconds, 60)
        return f"{int(m)}m{s:g}s" if s else f"{int(m)}m"
    return f"{seconds:g}s"
