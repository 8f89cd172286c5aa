"""Checks: a registry of assertion kinds, each `fn(spec, ctx) -> AssertionResult`.

`evaluate()` wraps every kind the same way: timing, `negate`, the custom `message`,
and an evaluator that crashes becomes an `error` result (never a pass, never a silent fail).
Kinds live in modules by family (text, structured, tools, metrics, judge, code); importing
this package registers them all. Users add kinds with `@convlab.evaluator("name")`.
"""

from __future__ import annotations

from convlab.checks._core import (
    EVALUATORS,
    KINDS,
    CheckContext,
    evaluate,
    evaluator,
    kind,
    result,
)

__all__ = ["EVALUATORS", "KINDS", "CheckContext", "evaluate", "evaluator", "kind", "result"]
