"""Small, dependency-free reference-overlap metrics: BLEU, ROUGE and METEOR (scores 0..1).

These are documented simplifications, not bit-for-bit copies of sacrebleu / rouge-score /
nltk. Text is lower-cased and split into word tokens (`\\w+`).
- `bleu`: sentence BLEU-4, geometric mean of clipped 1..4-gram precisions, add-one smoothing
  for 2..4-grams (Lin & Och 2004), times the brevity penalty. Shorter texts use fewer n.
- `rouge`: ROUGE-L F1 (longest common subsequence) by default; `rouge1` / `rouge2` give
  unigram / bigram overlap F1.
- `meteor`: exact-match METEOR (no stemming or synonyms): Fmean = 10PR / (R + 9P), times
  (1 - 0.5 * (chunks / matches) ** 3).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

__all__ = ["bleu", "meteor", "rouge", "tokens"]


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return re.findall(r"\w+", text.lower())


def _ngrams(words: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def bleu(candidate: str, reference: str) -> float:
    """Sentence BLEU (up to 4-grams) with add-one smoothing above unigrams."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    max_n = min(4, len(cand))
    log_sum = 0.0
    for n in range(1, max_n + 1):
        counts, ref_counts = _ngrams(cand, n), _ngrams(ref, n)
        overlap = sum(min(c, ref_counts[g]) for g, c in counts.items())
        total = sum(counts.values())
        if n == 1:
            if overlap == 0:
                return 0.0
            log_sum += math.log(overlap / total)
        else:
            log_sum += math.log((overlap + 1) / (total + 1))
    penalty = 1.0 if len(cand) > len(ref) else math.exp(1 - len(ref) / len(cand))
    return penalty * math.exp(log_sum / max_n)


def _f1(overlap: int, cand: int, ref: int) -> float:
    if overlap == 0 or cand == 0 or ref == 0:
        return 0.0
    p, r = overlap / cand, overlap / ref
    return 2 * p * r / (p + r)


def _lcs(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge(candidate: str, reference: str, variant: str = "rougeL") -> float:
    """ROUGE F1: `rougeL` (LCS), `rouge1` or `rouge2` (n-gram overlap)."""
    cand, ref = tokens(candidate), tokens(reference)
    if variant in ("rouge1", "rouge2"):
        n = int(variant[-1])
        c, r = _ngrams(cand, n), _ngrams(ref, n)
        overlap = sum(min(v, r[g]) for g, v in c.items())
        return _f1(overlap, sum(c.values()), sum(r.values()))
    if variant not in ("rougeL", "rougeLsum"):
        raise ValueError(f"unknown ROUGE variant {variant!r}; use rouge1, rouge2 or rougeL")
    return _f1(_lcs(cand, ref), len(cand), len(ref))


def _align(cand: list[str], ref: list[str]) -> list[tuple[int, int]]:
    """Greedy exact alignment, left to right, each reference word used once."""
    used: set[int] = set()
    pairs = []
    for i, word in enumerate(cand):
        for j, other in enumerate(ref):
            if j not in used and word == other:
                used.add(j)
                pairs.append((i, j))
                break
    return pairs


def meteor(candidate: str, reference: str) -> float:
    """Exact-match METEOR: harmonic mean weighted to recall, with a fragmentation penalty."""
    cand, ref = tokens(candidate), tokens(reference)
    pairs = _align(cand, ref)
    matches = len(pairs)
    if matches == 0:
        return 0.0
    p, r = matches / len(cand), matches / len(ref)
    fmean = 10 * p * r / (r + 9 * p)
    chunks = 1 + sum(
        1 for (i1, j1), (i2, j2) in itertools.pairwise(pairs) if not (i2 == i1 + 1 and j2 == j1 + 1)
    )
    return fmean * (1 - 0.5 * (chunks / matches) ** 3)
