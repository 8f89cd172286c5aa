"""The ids intention-kernel's runner gives a case's thread, its turns and their traces,
made as it makes them (convlab's results hold them; a store line derives them again)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

__all__ = ["case_thread", "digest", "trace_of", "turn_id_of"]


def digest(value: Any) -> str:
    """intention-kernel's `digest` (matrix.ts): sha256 hex of the JSON with keys sorted."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=1024)  # the engine makes it, the encoder checks it
def case_thread(run_id: str, case_id: str, variant: tuple[tuple[str, str], ...], n: int) -> str:
    """`<run id>:<case id>`, the case id as intention-kernel's (matrix.ts `expandCases`:
    digest of `{scenarioId, variants, repetition}`); `n` is the kernel's repetition."""
    if type(n) is not int or (variant and any(type(v) is not str for _, v in variant)):
        case = digest({"scenarioId": case_id, "variants": dict(variant), "repetition": n})
        return f"{run_id}:{case}"
    # digest's text written out (3x faster): keys in sorted order, variants' too (most cases
    # have none: nothing to sort)
    picks = (
        ",".join(f"{_string(k)}:{_string(v)}" for k, v in sorted(dict(variant).items()))
        if variant
        else ""
    )
    text = f'{{"repetition":{n},"scenarioId":{_string(case_id)},"variants":{{{picks}}}}}'
    return f"{run_id}:{hashlib.sha256(text.encode()).hexdigest()}"


@functools.lru_cache(maxsize=1024)  # the engine makes it, the encoder checks it
def turn_id_of(thread_id: str, step: str) -> str:
    """The turn's idempotent id, as intention-kernel's runner makes it."""
    # digest({"threadId": ..., "stepId": ...}) written out: two strings, keys in sorted order
    text = f'{{"stepId":{_string(step)},"threadId":{_string(thread_id)}}}'
    return f"eval.{hashlib.sha256(text.encode()).hexdigest()}"


_string: Callable[[str], str] = encode_basestring
"""A string as JSON, exactly as `digest`'s json.dumps writes it (`ensure_ascii=False`)."""


@functools.lru_cache(maxsize=1024)
def trace_of(turn_id: str) -> str:
    """The trace id convlab gives a turn whose agent gave none (unique per run and turn)."""
    return hashlib.sha256(turn_id.encode()).hexdigest()[:32]
