"""Checks benchmark: what one `evaluate` costs, and the per-suite unknown-evaluator walk.

Run from the project root:  python benchmarks/bench_checks.py [--quick]
Prints microseconds per `evaluate(spec, ctx)` for the engine's three bench kinds (contains,
regex, not_contains) and a few others, each as a ratio to a plain-Python baseline doing the
same test in the same run (`"ok" in text`, `re.search`, `json.loads` + a key, ...), awaited
from a coroutine as the engine awaits checks. Then the time of `unknown_evaluators(suite)`
on 5,000 and 100,000 single-turn cases without any custom kind, against a plain loop that
reads every assertion's kind. Times are this process's CPU time (`time.process_time`),
and each figure and its baseline are measured in turns, so that other processes sharing the
cores move both alike. No pass/fail: figures to compare before/after, e.g.
`PYTHONPATH=<other tree> python benchmarks/bench_checks.py` runs this file on another tree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench_engine import _suite  # the same 3-check suite the engine benchmark runs

from convlab.checks import CheckContext, evaluate, unknown_evaluators
from convlab.model import Observation, Suite, ToolCall
from convlab.model.assertions import parse_assertion

REGEX_SPEC = {"kind": "regex", "pattern": r"order \d+"}
TEXT = "Your order 4411 is on its way: ok, it ships tomorrow. " * 3
DATA_TEXT = json.dumps({"order": {"id": 4411, "status": "shipped"}, "ok": True})

KINDS: list[tuple[str, dict[str, Any], str, Callable[[], Any]]] = [
    # name, spec, reply text, the plain-Python test it makes
    ("contains", {"kind": "contains", "value": "ok"}, TEXT, lambda: "ok" in TEXT),
    (
        "regex",
        {"kind": "regex", "pattern": r"order \d+"},
        TEXT,
        lambda: re.search(r"order \d+", TEXT) is not None,
    ),
    ("not_contains", {"kind": "not_contains", "value": "error"}, TEXT, lambda: "error" in TEXT),
    ("equals", {"kind": "equals", "value": TEXT}, TEXT, lambda: TEXT == TEXT),
    (
        "json_path",
        {"kind": "json_path", "path": "order.status", "value": "shipped"},
        DATA_TEXT,
        lambda: json.loads(DATA_TEXT)["order"]["status"] == "shipped",
    ),
    (
        "check",
        {"kind": "check", "path": ["response", "text"], "operator": "contains", "value": "ok"},
        TEXT,
        lambda: "ok" in TEXT,
    ),
    (
        "tool_called",
        {"kind": "tool_called", "value": "search"},
        TEXT,
        lambda: any(c == "search" for c in ("lookup", "search")),
    ),
    (
        "all (contains, regex)",
        {"kind": "all", "assertions": [{"kind": "contains", "value": "ok"}, REGEX_SPEC]},
        TEXT,
        lambda: "ok" in TEXT and re.search(r"order \d+", TEXT) is not None,
    ),
    (
        "contains (negated, message)",
        {"kind": "contains", "value": "error", "negate": True, "message": "no error please"},
        TEXT,
        lambda: "error" not in TEXT,
    ),
]
BENCH3 = ("contains", "regex", "not_contains")


def _us(fn: Callable[[], Any], n: int) -> float:
    """Microseconds per call of `fn` (a coroutine function), awaited n times in one loop."""

    async def loop() -> float:
        start = time.process_time()
        for _ in range(n):
            await fn()
        return (time.process_time() - start) / n * 1e6

    return asyncio.run(loop())


def _medians(a: Callable[[], float], b: Callable[[], float], reps: int = 3) -> tuple[float, float]:
    """The medians of `reps` runs of a and of b, measured in turns (a, b, a, b, ...)."""
    runs = [(a(), b()) for _ in range(reps)]
    return statistics.median(x for x, _ in runs), statistics.median(y for _, y in runs)


def bench_evaluate(n: int) -> None:
    print(f"evaluate(spec, ctx), CPU us per call (median of 3 x {n:,}); baseline: the plain test")
    total = base_total = 0.0
    for name, raw, text, plain in KINDS:
        spec = parse_assertion(raw)
        calls = [ToolCall("search", {"q": "4411"}, result={"ok": True})]
        ctx = CheckContext(observation=Observation(text=text, tool_calls=calls))

        async def one(spec: Any = spec, ctx: CheckContext = ctx) -> Any:
            return await evaluate(spec, ctx)

        async def base(plain: Callable[[], Any] = plain) -> Any:
            return plain()

        us, b = _medians(lambda one=one: _us(one, n), lambda base=base: _us(base, n))
        if name in BENCH3:
            total, base_total = total + us, base_total + b
        print(f"  {name:<28} {us:7.2f} us   baseline {b:5.2f} us   {us / b:6.1f}x baseline")
    print(
        f"  {'the 3 bench kinds together':<28} {total:7.2f} us   baseline {base_total:5.2f} us"
        f"   {total / base_total:6.1f}x baseline"
    )


def bench_walk(sizes: list[int]) -> None:
    print("unknown_evaluators(suite), no custom kind, CPU time (median of 3)")
    for n in sizes:
        suite = _suite(n)

        def walk(suite: Suite = suite) -> float:
            start = time.process_time()
            problems = unknown_evaluators(suite)
            assert problems == []
            return time.process_time() - start

        def plain(suite: Suite = suite) -> float:
            start = time.process_time()
            kinds = [a.kind for c in suite.cases for a in c.assertions]
            assert "custom" not in kinds
            return time.process_time() - start

        s, b = _medians(walk, plain)
        print(
            f"  {n:>7,} cases: {s * 1000:8.2f} ms  ({s / n * 1e6:5.2f} us/case)"
            f"   plain loop {b * 1000:6.2f} ms   {s / b:5.1f}x plain loop"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, smaller suites")
    quick = parser.parse_args().quick
    bench_evaluate(2_000 if quick else 20_000)
    bench_walk([5_000] if quick else [5_000, 100_000])


if __name__ == "__main__":
    main()
