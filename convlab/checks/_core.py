"""The check registry, the evaluation context and the uniform wrapper around every kind."""

from __future__ import annotations

import functools
import inspect
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from convlab._durations import elapsed_ms
from convlab.errors import NO_JUDGE
from convlab.model.assertions import EVALUATORS
from convlab.model.blame import Blame, blame_of
from convlab.model.conversation import Message
from convlab.model.records import AssertionResult, Observation
from convlab.model.tracebacks import error_info, error_text
from convlab.registry import Registry

if TYPE_CHECKING:
    from convlab.agents.protocol import Agent
    from convlab.model.assertions import Assertion
    from convlab.model.records import TurnResult
    from convlab.model.suite import Case, TurnInput

__all__ = [
    "EVALUATORS",
    "KINDS",
    "NO_JUDGE",
    "CheckContext",
    "error_result",
    "evaluate",
    "evaluator",
    "kind",
    "lean_kind",
    "result",
    "skipped_result",
]

CheckFn = Callable[["Any", "CheckContext"], AssertionResult | Awaitable[AssertionResult]]
Outcome = tuple[bool, str, Any, Any, "dict[str, Any] | None"]
"""What a lean kind decides: (passed, message, expected, actual, details or None)."""
LeanFn = Callable[["Any", "CheckContext"], "Outcome | AssertionResult"]


@dataclass
class CheckContext:
    """What an assertion may look at."""

    observation: Observation = field(default_factory=Observation)
    """This turn's observation (the last one for case/final scope)."""
    messages: list[Message] = field(default_factory=list)
    """The whole conversation so far, including this turn's reply."""
    history: list[TurnResult] = field(default_factory=list)
    """Prior recorded turns (final scope: every turn)."""
    case: Case | None = None
    input: TurnInput | None = None
    """The scripted input of this turn, when there is one."""
    turn_index: int = 0
    world: dict[str, Any] | None = None
    judge: Agent | None = None
    judges: dict[str, Agent] = field(default_factory=dict)
    """Agents named by id, e.g. Yao's `agents:validator` (`run(judges={...})`)."""
    scope: str = "turn"
    """turn | final | checkpoint | suite | case."""
    multi_turn: bool = False
    """HoloDeck rule: metrics needing ground truth are skipped on turns without it."""
    summary: dict[str, Any] | None = None
    """Suite scope: the run summary."""
    cases: list[Any] = field(default_factory=list)
    """Suite scope: every case result."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Mode-specific values (e.g. the Python test's `x` context, combined dynamic output)."""


KINDS: Registry[CheckFn] = Registry("assertion kind")
"""Assertion kind -> evaluation function."""


def kind(name: str) -> Callable[[CheckFn], CheckFn]:
    """Register the evaluation function of a built-in assertion kind."""
    return KINDS.register(name)


_LEAN: dict[str, tuple[CheckFn, LeanFn]] = {}
"""Kind name -> (the function registered in KINDS, its lean outcome function)."""


def lean_kind(name: str) -> Callable[[LeanFn], CheckFn]:
    """Register a built-in kind whose function says what it decided as an `Outcome`
    (passed, message, expected, actual, details) rather than building the result itself;
    a rare branch may still return a whole AssertionResult (e.g. one without `actual`)."""

    def deco(lean: LeanFn) -> CheckFn:
        @functools.wraps(lean)
        def fn(spec: Any, ctx: CheckContext) -> AssertionResult:
            out = lean(spec, ctx)
            if isinstance(out, AssertionResult):
                return out
            passed, message, expected, actual, details = out
            return result(
                spec, passed, message, expected=expected, actual=actual, details=details or {}
            )

        KINDS.register(name)(fn)
        return fn

    return deco


_COMPOSITE = ("all", "any", "not")
_SYNC: dict[Any, bool] = {}
"""Kind function -> whether it is a plain (not `async def`) function."""


def runs_inline(spec: Any) -> bool:
    """Whether evaluating `spec` never waits on anything (a sync kind, or composites of them).

    `all`, `any` and `not` run such children one after the other in their own task rather
    than as gathered tasks: the same results, in the same order, without a task per child.
    Children that may wait (judges, scripts, custom evaluators) are still run concurrently.
    """
    kind = getattr(spec, "kind", None)
    if kind in _COMPOSITE:
        kids = spec.assertions if kind != "not" else (spec.assertion,)
        return all(runs_inline(k) for k in kids)
    if not isinstance(kind, str) or kind not in KINDS:
        return False
    fn = KINDS.get(kind)
    try:
        sync = _SYNC.get(fn)
        if sync is None:
            sync = _SYNC[fn] = not inspect.iscoroutinefunction(fn)
    except TypeError:  # an unhashable callable: ask every time
        sync = not inspect.iscoroutinefunction(fn)
    return sync


def evaluator(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a user evaluator, usable as `{"kind": "custom", "evaluator": name}`.

    The function receives `(ctx, parameters)` and returns a bool, a dict with `passed`
    (and optionally `message`, `evidence`), or an AssertionResult.
    """
    return EVALUATORS.register(name)


def result(spec: Any, passed: bool, message: str = "", **kw: Any) -> AssertionResult:
    """Build a pass/fail result for `spec`."""
    return AssertionResult(
        kind=spec.kind,
        id=spec.id,
        label=spec.label,
        status="passed" if passed else "failed",
        message=message,
        **kw,
    )


def error_result(spec: Any, message: str, blame: Blame = "suite", **kw: Any) -> AssertionResult:
    """Build an `error` result: the check could not decide (never a pass, never a fail).

    `blame` says whose fault that is (convlab.model.blame): the suite's by default (a bad
    path, regex or test), `judge` where the judge call failed, or the caught exception's.
    """
    return AssertionResult(
        kind=spec.kind,
        id=spec.id,
        label=spec.label,
        status="error",
        message=message,
        error=message,
        blame=blame,
        **kw,
    )


def skipped_result(spec: Any, message: str, **kw: Any) -> AssertionResult:
    """Build a `skipped` result: the check does not apply here (never counted as a pass)."""
    return AssertionResult(
        kind=spec.kind, id=spec.id, label=spec.label, status="skipped", message=message, **kw
    )


def incomplete_scope(ctx: CheckContext) -> str | None:
    """Why final-scope checks of a scripted case must not run, or None when they may.

    Final (scenario) assertions run only when every step was recorded and the last one has
    an observation: a partial conversation is never accepted by a final check that did
    not run (intention-kernel's rule). `ctx.history` holds every recorded turn at final scope.
    """
    case = ctx.case
    if ctx.scope != "final" or case is None or case.mode != "turns":
        return None
    done, total = len(ctx.history), len(case.turns)
    if done < total:
        return f"final assertions need every step recorded ({done} of {total} were)"
    if ctx.history and ctx.history[-1].observation is None:
        return "final assertions need the last step's observation (it has none)"
    return None


async def evaluate(spec: Assertion, ctx: CheckContext) -> AssertionResult:
    """Evaluate one assertion; never raises for a failing or crashing evaluator.

    The kind's result is built once, by the kind; here its negation and custom failure
    message are applied, and its duration set.
    """
    start = time.perf_counter()
    why = incomplete_scope(ctx)
    if why is not None:
        return skipped_result(spec, why)
    try:
        out = KINDS.get(spec.kind)(spec, ctx)
        res = await out if inspect.isawaitable(out) else out
        if not isinstance(res, AssertionResult):
            raise TypeError(
                f"the {spec.kind!r} check returned {type(res).__name__}, not an AssertionResult"
            )
    except Exception as exc:
        tb = traceback.format_exc(limit=5)
        res = error_result(
            spec, error_text(exc), blame_of(exc, "suite"), error_info=error_info(exc)
        )
        res.details["traceback"] = tb
    _apply_common(spec, res)
    res.duration_ms = elapsed_ms(start)
    return res


def _apply_common(spec: Any, res: AssertionResult) -> None:
    """Apply `negate` and the custom failure `message` (errors and skips stay as they are)."""
    if res.status in ("error", "skipped"):
        return
    if spec.negate:
        # Yao's evaluateAssertion: a negated check that now passes reads "negated assertion
        # passed"; one that now fails keeps the inner message, prefixed "negated: ", so the
        # failure still says what was found.
        passed = res.status != "passed"
        res.status = "passed" if passed else "failed"
        res.message = "negated assertion passed" if passed else f"negated: {res.message}"
    if res.status == "failed" and spec.message:
        res.message = spec.message
