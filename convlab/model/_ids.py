"""The ids intention-kernel's runner gives a case's thread, its turns and their traces,
made as it makes them."""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import msgspec

__all__ = ["case_thread", "digest", "trace_of", "turn_id_of"]


def digest(value: Any) -> str:
    """intention-kernel's `digest`: sha256 hex of the compact JSON with keys sorted (msgspec
    writes the text `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
    writes, for the texts and integers ids are made of)."""
    return hashlib.sha256(msgspec.json.encode(value, order="sorted")).hexdigest()


@functools.lru_cache(maxsize=1024)  # every turn of a case asks for its case's thread
def case_thread(run_id: str, case_id: str, variant: tuple[tuple[str, str], ...], n: int) -> str:
    """`<run id>:<case id>`, the case id as intention-kernel's (the digest of
    `{scenarioId, variants, repetition}`); `n` is the kernel's repetition."""
    case = digest({"scenarioId": case_id, "variants": dict(variant), "repetition": n})
    return f"{run_id}:{case}"


def turn_id_of(thread_id: str, step: str) -> str:
    """The turn's idempotent id, as intention-kernel's runner makes it."""
    return f"eval.{digest({'threadId': thread_id, 'stepId': step})}"


def trace_of(turn_id: str) -> str:
    """The trace id convlab gives a turn whose agent gave none (unique per run and turn)."""
    return hashlib.sha256(turn_id.encode()).hexdigest()[:32]
