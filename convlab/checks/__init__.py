"""Checks: a registry of assertion kinds, each `fn(spec, ctx) -> AssertionResult`.

`evaluate()` wraps every kind the same way: timing, `negate`, the custom `message`,
and an evaluator that crashes becomes an `error` result (never a pass, never a silent fail).
Kinds live in modules by family (text, structured, tools, toolargs, metrics, judge,
graders, code); importing this package registers them all. Users add kinds with
`@convlab.evaluator("name")`.
"""

from __future__ import annotations

from convlab.checks import (  # noqa: F401 - importing a family registers its kinds
    code,
    graders,
    judge,
    metrics,
    structured,
    text,
    toolargs,
    tools,
)
from convlab.checks._core import (
    EVALUATORS,
    KINDS,
    NO_JUDGE,
    CheckContext,
    error_result,
    evaluate,
    evaluator,
    kind,
    result,
    skipped_result,
)
from convlab.checks._values import output_of
from convlab.checks.api import check, describe_kinds, preflight, unknown_evaluators
from convlab.checks.code import TestContext
from convlab.checks.graders import GraderContext, GraderResult, ToolInvocation
from convlab.checks.judge import TestJudge

__all__ = [
    "EVALUATORS",
    "KINDS",
    "NO_JUDGE",
    "CheckContext",
    "GraderContext",
    "GraderResult",
    "TestContext",
    "TestJudge",
    "ToolInvocation",
    "check",
    "describe_kinds",
    "error_result",
    "evaluate",
    "evaluator",
    "kind",
    "output_of",
    "preflight",
    "result",
    "skipped_result",
    "unknown_evaluators",
]
