"""Significance tests over counts: Fisher's exact test and Holm's correction.

Exact integer arithmetic (math.comb), no SciPy: run-to-run comparison, an experiment's
variants and the forks of a case's runs (convlab.analysis.divergence) all test a 2x2 table
of passes and failures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["fisher_exact", "holm"]


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p-value of Fisher's exact test on the table [[a, b], [c, d]].

    Sums the hypergeometric probabilities of every table with the same margins that is no more
    likely than the one observed. Weights are exact integers, so no tolerance is needed.
    """
    if min(a, b, c, d) < 0:
        raise ValueError("a contingency table needs non-negative counts")
    row1, row2, col1 = a + b, c + d, a + c
    lo, hi = max(0, col1 - row2), min(row1, col1)
    weights = {x: math.comb(row1, x) * math.comb(row2, col1 - x) for x in range(lo, hi + 1)}
    observed = weights[a]
    tail = sum(w for w in weights.values() if w <= observed)
    return min(1.0, tail / math.comb(row1 + row2, col1))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given (NaN stays NaN and is not
    counted): the i-th smallest of m is multiplied by m - i + 1, kept monotone and at most 1.
    """
    tested = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m = len(tested)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
