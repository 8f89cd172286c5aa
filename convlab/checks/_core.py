"""The check registry, the evaluation context and the uniform wrapper around every kind."""

from __future__ import annotations

import functools
import inspect
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from convlab.model.assertions import EVALUATORS
from convlab.model.blame import BLAMES, Blame, blame_of
from convlab.model.conversation import Message, Observation
from convlab.model.results import AssertionResult
from convlab.registry import Registry

if TYPE_CHECKING:
    from convlab.agents.protocol import Agent
    from convlab.model.assertions import Assertion
    from convlab.model.results import TurnResult
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

NO_JUDGE = (
    "no judge is configured: pass one to run(..., judge=...) (or convlab.check(..., judge=...)),"
    " e.g. judge='openai:gpt-4o-mini' for an OpenAI-compatible model, or a function"
    " judge(messages) -> str"
)
"""The error message of every judge-based check when no judge is configured."""

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
    """Register a built-in kind that decides with an Outcome instead of building a result.

    (A rare branch may still return a whole AssertionResult, e.g. one without `actual`.)

    KINDS gets a function that builds the AssertionResult from the outcome (what direct
    callers and `describe_kinds` see); `evaluate` calls the outcome function itself and
    builds the one result it returns, negation and custom message applied, with no
    validation pass (every value is one the kind made) and no copy. A kind registered over
    it (`KINDS.registered`) is evaluated as any other: the lean path is taken only while
    KINDS holds the function registered here.
    """

    def deco(lean: LeanFn) -> CheckFn:
        @functools.wraps(lean)
        def fn(spec: Any, ctx: CheckContext) -> AssertionResult:
            out = lean(spec, ctx)
            if isinstance(out, AssertionResult):
                return out
            passed, message, expected, actual, details = out
            if details is None:
                return result(spec, passed, message, expected=expected, actual=actual)
            kw = {"expected": expected, "actual": actual, "details": details}
            return result(spec, passed, message, **kw)

        KINDS.register(name)(fn)
        _LEAN[name] = (fn, lean)
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


_new = object.__new__
_set = object.__setattr__
_STATUSES = frozenset(("passed", "failed", "error", "skipped"))
_BLAMES = frozenset(BLAMES)
_HEAD = frozenset(("kind", "id", "label", "status", "message"))
_OPTIONAL = frozenset(("expected", "actual", "error", "blame", "score", "children", "details"))


def _valid(given: dict[str, Any]) -> bool:
    """Whether `given` holds only values AssertionResult's validation would keep as they are.

    Anything else (a wrong type, an unknown field, a score to coerce) goes through pydantic,
    which coerces or raises exactly as before.
    """
    if not _OPTIONAL.issuperset(given.keys() - _HEAD):
        return False
    for name in ("id", "label", "error"):
        v = given.get(name)
        if v is not None and type(v) is not str:
            return False
    score = given.get("score")
    kids = given.get("children", ())
    details = given.get("details", {})
    return (
        type(given["kind"]) is str
        and given["status"] in _STATUSES
        and type(given["message"]) is str
        and (given.get("blame") is None or given["blame"] in _BLAMES)
        and (score is None or type(score) is float)
        and type(kids) in (list, tuple)
        and all(type(k) is AssertionResult for k in kids)
        and type(details) is dict
        and all(type(k) is str for k in details)
    )


def _make(**given: Any) -> AssertionResult:
    """AssertionResult(**given), without the validation pass when nothing needs validating.

    The object is the one pydantic would build: the same values, fresh `children` and
    `details` containers, the given names as its fields-set.
    """
    if not _valid(given):
        return AssertionResult(**given)
    res = _new(AssertionResult)
    _set(
        res,
        "__dict__",
        {
            "kind": given["kind"],
            "id": given["id"],
            "label": given["label"],
            "status": given["status"],
            "message": given["message"],
            "expected": given.get("expected"),
            "actual": given.get("actual"),
            "error": given.get("error"),
            "blame": given.get("blame"),
            "score": given.get("score"),
            "duration_ms": 0.0,
            "children": list(given.get("children", ())),
            "details": dict(given.get("details", {})),
        },
    )
    _set(res, "__pydantic_fields_set__", set(given))
    _set(res, "__pydantic_extra__", None)
    _set(res, "__pydantic_private__", None)
    return res


def result(spec: Any, passed: bool, message: str = "", **kw: Any) -> AssertionResult:
    """Build a pass/fail result for `spec`."""
    return _make(
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
    return _make(
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
    return _make(
        kind=spec.kind, id=spec.id, label=spec.label, status="skipped", message=message, **kw
    )


def incomplete_scope(ctx: CheckContext) -> str | None:
    """Why final-scope checks of a scripted case must not run, or None when they may.

    Final (scenario) assertions run only when every step was recorded and the last one has
    an observation: a partial conversation is never accepted by a final check that did
    not run (seed 001). `ctx.history` holds every recorded turn at final scope.
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


def evaluate_now(spec: Assertion, ctx: CheckContext) -> AssertionResult | None:
    """`evaluate`'s result for a check its kind decides at once (a built-in lean kind whose
    outcome function returns an outcome), without a coroutine; None for any other (await
    `evaluate`, which says how it went: an outcome function that raised runs again there,
    as the built-in ones read only their spec and context)."""
    if ctx.scope == "final":
        return None
    lean = _LEAN.get(spec.kind)
    if lean is None or lean[0] is not KINDS.find(spec.kind):
        return None
    start = time.perf_counter()
    try:
        decided = lean[1](spec, ctx)
    except Exception:
        return None
    return _lean_result(spec, decided, start) if type(decided) is tuple else None


async def evaluate(spec: Assertion, ctx: CheckContext) -> AssertionResult:
    """Evaluate one assertion; never raises for a failing or crashing evaluator.

    The engine calls this once per assertion per turn, so the common kinds take a lean path
    (`lean_kind`): the kind decides, and the one result object is built here.
    """
    start = time.perf_counter()
    if ctx.scope == "final":
        why = incomplete_scope(ctx)
        if why is not None:
            return skipped_result(spec, why)
    try:
        fn = KINDS.get(spec.kind)
        lean = _LEAN.get(spec.kind)
        if lean is not None and lean[0] is fn:
            decided = lean[1](spec, ctx)
            if type(decided) is tuple:
                return _lean_result(spec, decided, start)
            out: Any = decided
        else:
            out = fn(spec, ctx)
        if type(out) is AssertionResult:
            res = out
        else:
            res = await out if inspect.isawaitable(out) else out
    except Exception as exc:
        tb = traceback.format_exc(limit=5)
        res = error_result(spec, f"{type(exc).__name__}: {exc}", blame_of(exc, "suite"))
        res.details["traceback"] = tb
    res = _apply_common(spec, res)
    res.duration_ms = (time.perf_counter() - start) * 1000
    return res


_LEAN_FIELDS = frozenset(
    ("kind", "id", "label", "status", "message", "expected", "actual", "duration_ms")
)
_LEAN_DETAILED = _LEAN_FIELDS | {"details"}


def _lean_result(spec: Any, outcome: Outcome, start: float) -> AssertionResult:
    """The result `result()` + `_apply_common` + the duration would give, built once."""
    passed, message, expected, actual, details = outcome
    if spec.negate:
        passed = not passed
        message = "negated assertion passed" if passed else f"negated: {message}"
    if not passed and spec.message:
        message = spec.message
    res = _new(AssertionResult)
    _set(
        res,
        "__dict__",
        {
            "kind": spec.kind,
            "id": spec.id,
            "label": spec.label,
            "status": "passed" if passed else "failed",
            "message": message,
            "expected": expected,
            "actual": actual,
            "error": None,
            "blame": None,
            "score": None,
            "duration_ms": (time.perf_counter() - start) * 1000,
            "children": [],
            "details": {} if details is None else details,
        },
    )
    _set(res, "__pydantic_fields_set__", set(_LEAN_FIELDS if details is None else _LEAN_DETAILED))
    _set(res, "__pydantic_extra__", None)
    _set(res, "__pydantic_private__", None)
    return res


def _apply_common(spec: Any, res: AssertionResult) -> AssertionResult:
    """Apply `negate` and the custom failure `message` (errors and skips stay as they are)."""
    if res.status in ("error", "skipped"):
        return res
    if spec.negate:
        # Yao agent/test/assert.go evaluateAssertion: a negated check that now passes reads
        # "negated assertion passed"; one that now fails keeps the inner message, prefixed
        # "negated: ", so the failure still says what was found.
        passed = res.status != "passed"
        msg = "negated assertion passed" if passed else f"negated: {res.message}"
        res = res.model_copy(update={"status": "passed" if passed else "failed", "message": msg})
    if res.status == "failed" and spec.message:
        res = res.model_copy(update={"message": spec.message})
    return res
