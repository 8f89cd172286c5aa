"""A finished instance as the runner keeps it: its CaseResult, made from what its
conversation got to, and its line (stored, when the run has a store)."""

from __future__ import annotations

import time
from typing import Any

from convlab.engine.codes import case_code
from convlab.engine.conversation import Conversation, kernel_repetition
from convlab.engine.modes import Outcome
from convlab.engine.replies import share_case_text
from convlab.engine.store import ResultStore
from convlab.model._codec import decode, encode, encode_fields
from convlab.model._trusted import assign, build
from convlab.model.blame import Blame, blame_of, case_blame
from convlab.model.results import CaseResult
from convlab.plan import Instance

__all__ = ["Entry", "closed", "error_text", "kept", "passed_line", "result_of"]

Entry = tuple[str, bytes] | CaseResult
"""A finished instance as the runner keeps it: its status and encoded line (lean), or the
model itself when it cannot be encoded (a value JSON cannot hold)."""


def error_text(exc: BaseException) -> str:
    """`Type: message` of an exception, as results and run errors say it."""
    if isinstance(exc, TimeoutError) and not str(exc):
        return "TimeoutError: timed out"
    return f"{type(exc).__name__}: {exc}"


def result_of(
    inst: Instance, conv: Conversation, outcome: Outcome, started: str, t0: float
) -> CaseResult:
    """The instance's result: its conversation's turns and what its mode concluded."""
    # built from the engine's own values: no validation needed
    result = build(CaseResult, **_values(inst, conv, outcome, started, t0))
    # the blame CaseResult's validator would settle, and the code
    assign(result, blame=case_blame(result, outcome.blame), code=case_code(result))
    share_case_text(result)  # a long reply is stored once, on its turn
    return result


def _values(
    inst: Instance, conv: Conversation, outcome: Outcome, started: str, t0: float
) -> dict[str, Any]:
    return {
        "case_id": inst.case.id,
        "variant": dict(inst.variant),
        "repetition": inst.repetition,
        "run": inst.run,
        "status": outcome.status,
        "reward": _reward(outcome),
        "turns": list(conv.turns),
        "assertions": list(outcome.assertions),
        "checkpoints": list(outcome.checkpoints),
        "error": outcome.error,
        "blame": outcome.blame,
        "duration_ms": int((time.perf_counter() - t0) * 1e6 + 0.5) / 1000,  # to the us
        "attempts": conv.attempts.calls or 1,
        "usage": conv.usage,
        "started_at": started,
        "finish_reason": outcome.finish_reason,
    }


def passed_line(
    inst: Instance, conv: Conversation, outcome: Outcome, started: str, t0: float
) -> bytes:
    """`encode(result_of(...))` of an instance whose mode passed it with no case-level check
    (a standard case), without the CaseResult no one reads: a pass has no blame and no code,
    and no case-level check holds a reply to share. The line is all the run keeps of it."""
    fields = _values(inst, conv, outcome, started, t0)
    fields.update(code=None, metadata={})  # the rest of a CaseResult's fields, as built
    return encode_fields(fields, (conv.env.run_id, kernel_repetition(inst)), "")


def _reward(outcome: Outcome) -> float:
    if outcome.status != "passed":
        return 0.0
    scores = [
        a.score for a in outcome.assertions if a.kind == "python_test" and a.score is not None
    ]
    return float(scores[0]) if scores else 1.0


def _lean(result: CaseResult, thread: tuple[str, int] | None) -> Entry:
    """`result` as its status and line, or itself when a value in it cannot be encoded."""
    try:
        return (result.status, encode(result, thread=thread))
    except Exception:  # e.g. an object in `details` JSON cannot hold: keep the model
        return result


def kept(
    store: ResultStore | None, result: CaseResult | bytes, thread: tuple[str, int]
) -> tuple[CaseResult | None, Entry]:
    """The instance as finally recorded (stored, if there is a store) and its entry.

    `result` is its CaseResult, or the line of an instance that passed (`passed_line`: the
    model given back is then None, unless the store failed); `thread`: what its thread id
    was made from (run id, kernel repetition)."""
    model: CaseResult | None
    entry: Entry
    if isinstance(result, bytes):
        model, entry = None, ("passed", result)
    else:
        model, entry = result, _lean(result, thread)
    if store is None:
        return model, entry
    try:
        store.append(entry[1] if isinstance(entry, tuple) else entry)
    except Exception as exc:
        model = result if isinstance(result, CaseResult) else decode(result)
        why = f"results store {store.path}: could not write this instance ({error_text(exc)})"
        if model.status == "passed":
            failed = model.model_copy(update={"status": "error", "error": why})
        else:
            failed = model.model_copy(update={"error": f"{model.error}; {why}"})
        failed.blame = case_blame(failed, blame_of(exc, "infrastructure"))
        return failed, _lean(failed, thread)
    return model, entry


def closed(inst: Instance, status: str, why: str, blame: Blame | None = None) -> CaseResult:
    """The result of an instance that did not run (skipped, blocked, cancelled, ...)."""
    result = CaseResult(
        case_id=inst.case.id,
        variant=inst.variant,
        repetition=inst.repetition,
        run=inst.run,
        status=status,  # type: ignore[arg-type]
        error=why,
        blame=blame,
    )
    result.code = case_code(result)
    return result
