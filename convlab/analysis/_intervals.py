"""Intervals for a pass rate: the Wilson score interval, thinkingbox's Jeffreys interval and
goldilocks zone.

thinkingbox (`tb agg`, thinkingbox/common/eval_utils.py `cred_int`, `prob_in_zone`) puts a
Jeffreys prior Beta(0.5, 0.5) on a test's pass probability, so c passes in n runs give the
posterior Beta(0.5 + c, 0.5 + n - c). thinkingbox uses scipy's `betainc`/`betaincinv`; scipy is
a large dependency for two functions, so the regularized incomplete beta is computed here
(Lentz's continued fraction, as in Numerical Recipes `betacf`) and inverted by bisection.
Both agree with scipy to about 1e-12, far below the two decimals `tb agg` prints.
"""

from __future__ import annotations

import math
from typing import Literal

__all__ = [
    "GOLDILOCKS",
    "INTERVALS",
    "Interval",
    "betainc",
    "betaincinv",
    "interval_kind",
    "interval_of",
    "jeffreys",
    "prob_in_zone",
    "wilson",
]

Interval = Literal["wilson", "jeffreys"]
INTERVALS = ("wilson", "jeffreys")
"""`wilson` (the Wilson score interval, convlab's default) or `jeffreys` (thinkingbox's
credible interval)."""
Z95 = 1.959963984540054
"""The standard normal quantile for a two-sided 95% interval."""

GOLDILOCKS = (0.0625, 0.9375)
"""thinkingbox's goldilocks zone: a test is informative when its pass probability is inside."""
_PRIOR = 0.5
"""Jeffreys prior Beta(0.5, 0.5), as `beta_post_params(a0=0.5, b0=0.5)`."""


def _continued_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b): the CDF of Beta(a, b) at x."""
    if a <= 0 or b <= 0:
        raise ValueError(f"Beta parameters must be positive, got a={a}, b={b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):  # the fraction converges fast on this side
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


def betaincinv(a: float, b: float, p: float) -> float:
    """The x with I_x(a, b) = p (the Beta(a, b) quantile), by bisection to float precision."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a probability must be in [0, 1], got {p}")
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if betainc(a, b, mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _posterior(c: int, n: int) -> tuple[float, float]:
    if not 0 <= c <= n:
        raise ValueError(f"passes must be between 0 and runs ({n}), got {c}")
    return _PRIOR + c, _PRIOR + (n - c)


def jeffreys(c: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The equal-tailed credible interval of the pass probability (thinkingbox's `cred_int`).

    With no runs the posterior is the prior itself, as in thinkingbox (never NaN).
    """
    a, b = _posterior(c, n)
    tail = (1 - level) / 2
    return betaincinv(a, b, tail), betaincinv(a, b, 1 - tail)


def prob_in_zone(
    c: int, n: int, lower: float = GOLDILOCKS[0], upper: float = GOLDILOCKS[1]
) -> float:
    """P(lower < p < upper | c passes in n runs) under the Jeffreys posterior (`prob_in_zone`)."""
    if not 0.0 <= lower < upper <= 1.0:
        raise ValueError("Invalid bounds. Must have 0.0 <= lower < upper <= 1.0.")
    a, b = _posterior(c, n)
    return betainc(a, b, upper) - betainc(a, b, lower)


def wilson(c: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for c passes in n runs, as fractions; (NaN, NaN) when n == 0.

    Chosen over the normal interval because it stays inside [0, 1] and behaves at 0/n and n/n.
    """
    if n == 0:
        return (math.nan, math.nan)
    p = c / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if c == 0 else max(0.0, centre - margin)  # exact ends, free of rounding
    high = 1.0 if c == n else min(1.0, centre + margin)
    return (low, high)


def interval_of(c: int, n: int, interval: str = "wilson") -> tuple[float, float]:
    """The 95% interval of c passes in n runs, as fractions: `wilson` or `jeffreys`.

    Jeffreys is NaN at n == 0 here (thinkingbox would give the prior's interval, which says
    nothing about the agent), so both kinds show "no runs" the same way.
    """
    kind = interval_kind(interval)
    if n == 0:
        return (math.nan, math.nan)
    return wilson(c, n) if kind == "wilson" else jeffreys(c, n)


def interval_kind(interval: str) -> Interval:
    """Validate an `interval` setting ('wilson' or 'jeffreys')."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be 'wilson' or 'jeffreys', got {interval!r}")
    return "wilson" if interval == "wilson" else "jeffreys"
