"""What a case's runs add up to, in words: Yao's class, the verdict, and the stability shown.

- `classification` is Yao's class from the pass rate alone (`stable`, `mostly_stable`,
  `unstable`, `highly_unstable`), kept as the seed's format has it. It calls a case that
  fails every run, a deterministic failure, `highly_unstable`, and so a case run once.
- `verdict` says what the class cannot: `one run`, `always passes`, `always fails`, `flaky`.
- `stability` is the word every view shows (tables, charts, cards, console, reports): Yao's
  class for a flaky case, and otherwise what the verdict says, so the two never disagree.
"""

from __future__ import annotations

import math

__all__ = ["CLASSES", "STABILITY", "VERDICTS", "classify", "stability_word", "verdict"]

CLASSES = ("stable", "mostly_stable", "unstable", "highly_unstable")
"""Yao's stability classes, best first."""

VERDICTS = ("always passes", "always fails", "flaky", "one run")
"""Plain words beside Yao's stability class: a case run once and a case that always fails are both
`highly_unstable` when they fail, and only these words tell them apart."""

STABILITY = ("stable", "mostly stable", "unstable", "highly unstable", "always fails", "one run")
"""`stability` values, best first:

- `stable`: every run passed (two runs or more);
- `mostly stable` (80-99% passed), `unstable` (50-79%), `highly unstable` (under 50%): a flaky
  case, some runs passed and some did not, by Yao's pass-rate ranges;
- `always fails`: no run passed (two runs or more), a failure that repeats, not noise;
- `one run`: a single run says nothing about stability (its status says whether it passed).

A case with no counted run has "" (nothing ran to a verdict)."""


def classify(pass_rate: float) -> str | None:
    """Yao's class for a pass rate in percent (boundaries inclusive); None when NaN."""
    if math.isnan(pass_rate):
        return None
    if pass_rate >= 100:
        return "stable"
    if pass_rate >= 80:
        return "mostly_stable"
    if pass_rate >= 50:
        return "unstable"
    return "highly_unstable"


def verdict(runs: int, passed: int) -> str:
    """`one run`, `always passes`, `always fails` or `flaky` ("" when nothing counted)."""
    if runs == 0:
        return ""
    if runs == 1:
        return "one run"
    if passed == runs:
        return "always passes"
    return "always fails" if passed == 0 else "flaky"


def stability_word(runs: int, passed: int) -> str:
    """The `stability` of a case with `passed` passes in `runs` counted runs (see STABILITY)."""
    if runs == 0:
        return ""
    if runs == 1:
        return "one run"
    if passed == runs:
        return "stable"
    if passed == 0:
        return "always fails"
    rate = 100 * passed / runs
    return "mostly stable" if rate >= 80 else "unstable" if rate >= 50 else "highly unstable"
