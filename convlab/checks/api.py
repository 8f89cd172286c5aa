"""The notebook-facing entry points: `check()`, `describe_kinds()`, and suite pre-flight.

Example:
    >>> import convlab as cl
    >>> cl.check("hello world", {"type": "contains", "value": "world"}).passed
    True
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from convlab._user_code import import_callable
from convlab.agents.protocol import as_agent
from convlab.checks._core import EVALUATORS, KINDS, CheckContext, evaluate
from convlab.checks._values import output_of
from convlab.errors import Problem, SuiteError
from convlab.model.assertions import Assertion, parse_assertion
from convlab.model.conversation import Message
from convlab.model.records import AssertionResult, Observation

if TYPE_CHECKING:
    from convlab.model.suite import Suite

__all__ = [
    "check",
    "describe_kinds",
    "iter_assertions",
    "output_of",
    "parse_spec",
    "preflight",
    "to_spec",
    "unknown_evaluators",
]

SUITE_KINDS = ("check", "all", "any", "not", "custom")
"""`kind` values in the JSON-suite spelling (parsed by convlab.formats.suite_json)."""


def check(
    reply: Any,
    assertion: Any,
    *,
    judge: Any = None,
    messages: list[Any] | None = None,
    judges: dict[str, Any] | None = None,
) -> AssertionResult:
    """Evaluate one assertion on one reply, e.g. in a notebook cell.

    Args:
        reply: The agent's answer: a str, a `convlab.Reply`, a dict (structured output)
            or an Observation.
        assertion: A dict in any format's spelling (`{"type": "contains", ...}` as in JSONL,
            `{"kind": "check", ...}` as in JSON suites, convlab's own `kind` names) or an
            assertion model.
        judge: The judge for judge-based kinds: an agent, a spec string or a function.
        messages: The conversation so far (dicts or Messages), for judges and scripts.
        judges: Agents by the id an assertion names, e.g. `{"agents:validator": agent}`
            for Yao's `{"type": "agent", "use": "agents:validator"}`.

    Returns:
        The AssertionResult; its repr shows pass/fail, the expected and the actual value.

    Raises:
        SuiteError: When the assertion itself is invalid (with the field path).
    """
    spec = to_spec(assertion)
    obs = _observation(reply)
    convo = [m if isinstance(m, Message) else Message.model_validate(m) for m in messages or []]
    ctx = CheckContext(
        observation=obs,
        messages=convo + list(obs.messages) if messages is not None else list(obs.messages),
        judge=as_agent(judge) if judge is not None else None,
        judges={k: as_agent(v) for k, v in (judges or {}).items()},
    )
    from convlab._sync import run_sync  # the engine's loop bridge, as run() uses

    return run_sync(lambda: evaluate(spec, ctx))


def _observation(reply: Any) -> Observation:
    if isinstance(reply, Observation):
        return reply
    from convlab.agents.function import to_observation

    return to_observation(reply)


def to_spec(assertion: Any) -> Assertion:
    """An assertion model from a model, or a dict in any format's spelling."""
    if isinstance(assertion, BaseModel) and hasattr(assertion, "kind"):
        return assertion  # type: ignore[return-value]
    if isinstance(assertion, str):
        assertion = {"type": assertion}  # JSONL shorthand: a bare type name
    if isinstance(assertion, dict) and "type" in assertion and "kind" not in assertion:
        from convlab.formats.jsonl import parse_jsonl_assertion

        return parse_jsonl_assertion(assertion)
    if isinstance(assertion, dict) and assertion.get("kind") in SUITE_KINDS:
        from convlab.formats.suite_json import parse_suite_assertion

        return parse_suite_assertion(assertion)
    return parse_spec(assertion)


def _dotted(loc: tuple[Any, ...], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def _clean(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop the union tags pydantic puts in locations (`('all', 'assertions', 0, 'check')`)."""
    kept: list[Any] = []
    for i, part in enumerate(loc):
        at_tag = i == 0 or isinstance(loc[i - 1], int) or loc[i - 1] == "assertion"
        if at_tag and isinstance(part, str) and (part in KINDS or "[" in part):
            continue
        kept.append(part)
    return tuple(kept)


def _problem(err: Any, file: str, line: int | None, path: str) -> Problem:
    loc = _clean(tuple(err["loc"]))
    if err["type"] == "union_tag_invalid":
        message = str(KINDS.unknown(str(err["ctx"]["tag"])))
        return Problem(file, line, _dotted((*loc, "kind"), path), message)
    if err["type"] == "union_tag_not_found":
        message = f"missing 'kind' (one of {', '.join(KINDS.names())})"
        return Problem(file, line, _dotted(loc, path), message)
    message = str(err["msg"]).removeprefix("Value error, ")
    return Problem(file, line, _dotted(loc, path), message)


def parse_spec(
    obj: Any, *, file: str = "<check>", line: int | None = None, path: str = ""
) -> Assertion:
    """Validate an assertion in convlab's native spelling; every problem with its field path.

    An unknown kind names the closest known ones ("Did you mean 'contains'?").

    Raises:
        SuiteError: With one Problem per mistake (file, line, path such as
            `assertions[0].operator`, message).
    """
    try:
        return parse_assertion(obj)
    except ValidationError as exc:
        raise SuiteError(_problem(e, file, line, path) for e in exc.errors()) from None


def describe_kinds() -> list[tuple[str, str]]:
    """(kind, one-line description) for every registered assertion kind, sorted by name."""
    rows = []
    for name in KINDS.names():
        doc = inspect.getdoc(KINDS.get(name)) or ""
        rows.append((name, doc.splitlines()[0] if doc else ""))
    return rows


def _walk(spec: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, spec
    kind = getattr(spec, "kind", None)
    if kind in ("all", "any"):
        for i, child in enumerate(spec.assertions):
            yield from _walk(child, f"{path}.assertions[{i}]")
    elif kind == "not":
        yield from _walk(spec.assertion, f"{path}.assertion")


def _names_unknown(specs: Any) -> bool:
    """Whether any of `specs` (nested ones too) is a `custom` naming no registered evaluator."""
    for spec in specs:
        kind = spec.kind
        if kind == "custom":
            if spec.evaluator not in EVALUATORS:
                return True
        elif kind in ("all", "any"):
            if _names_unknown(spec.assertions):
                return True
        elif kind == "not" and _names_unknown((spec.assertion,)):
            return True
    return False


def _any_unknown(suite: Suite) -> bool:
    """The quick scan before `unknown_evaluators` builds field paths: kinds only, no strings.

    A run calls it once per suite: it only compares kind names, so a large suite pays little,
    and the path-building walk runs only when this finds an unknown kind.
    """
    if _names_unknown(suite.assertions):
        return True
    for case in suite.cases:
        if _names_unknown(case.assertions):
            return True
        for turn in case.turns:
            if turn.assertions and _names_unknown(turn.assertions):
                return True
        for cp in case.checkpoints:
            if cp.assertion is not None and _names_unknown((cp.assertion,)):
                return True
    return False


def iter_assertions(suite: Suite) -> Iterator[tuple[str, int | None, str, Any]]:
    """(file, line, field path, spec) for every assertion of a suite, nested ones too."""
    top = suite.sources[0].file if suite.sources else f"<suite {suite.id}>"
    for i, spec in enumerate(suite.assertions):
        for path, s in _walk(spec, f"assertions[{i}]"):
            yield top, None, path, s
    for case in suite.cases:
        file = case.source.file if case.source else top
        line = case.source.line if case.source else None
        roots = [(f"assertions[{i}]", s) for i, s in enumerate(case.assertions)]
        roots += [
            (f"turns[{t}].assertions[{i}]", s)
            for t, turn in enumerate(case.turns)
            for i, s in enumerate(turn.assertions)
        ]
        roots += [
            (f"checkpoints[{c}].assertion", cp.assertion)
            for c, cp in enumerate(case.checkpoints)
            if cp.assertion is not None
        ]
        for root, spec in roots:
            for path, s in _walk(spec, root):
                yield file, line, path, s


def unknown_evaluators(suite: Suite) -> list[Problem]:
    """Every `custom` assertion naming an evaluator nobody registered (call before running)."""
    if not _any_unknown(suite):
        return []
    problems = []
    for file, line, path, spec in iter_assertions(suite):
        if getattr(spec, "kind", None) == "custom" and spec.evaluator not in EVALUATORS:
            # intention-kernel's runner.ts `assertEvaluators`: EVALUATOR_NOT_FOUND, before
            # any session opens
            message = f"EVALUATOR_NOT_FOUND: {EVALUATORS.unknown(spec.evaluator)}"
            problems.append(Problem(file, line, f"{path}.evaluator", message))
    return problems


def preflight(suite: Suite) -> list[Problem]:
    """unknown_evaluators(), plus every grader or script that cannot be imported."""
    problems = unknown_evaluators(suite)
    for file, line, path, spec in iter_assertions(suite):
        kind = getattr(spec, "kind", None)
        target = spec.grader if kind == "grader" else spec.script if kind == "script" else None
        if target is None:
            continue
        try:
            import_callable(target)
        except Exception as exc:
            field = "grader" if kind == "grader" else "script"
            problems.append(
                Problem(file, line, f"{path}.{field}", f"cannot import {field} {target!r}: {exc}")
            )
    return problems
