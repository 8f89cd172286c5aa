"""Masking the known secrets in what the engine records: a result as it is kept, a turn as it
is shown while the run goes on (the rule and the secrets are `convlab.agents._secret`'s)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import TypeVar

from convlab.agents._secret import mask
from convlab.model.codec import convert, encode
from convlab.model.records import CaseResult, TurnResult

__all__ = ["masked", "masked_turn"]

R = TypeVar("R", CaseResult, TurnResult)


@functools.lru_cache(maxsize=8)
def _as_json(secrets: tuple[str, ...]) -> tuple[bytes, ...]:
    """Each secret as an encoded record holds it (JSON-escaped, without its quotes)."""
    return tuple(encode(secret)[1:-1] for secret in secrets)


def masked(record: R, line: bytes, secrets: Sequence[str]) -> tuple[R, bytes]:
    """`record` and its encoded `line` with every one of `secrets` replaced by `***` in every
    text it holds (a reply that echoes the request's headers, an exception that prints a
    key), and the places that held one listed in its `metadata["masked"]` (a result's);
    unchanged (and not
    copied) when the line holds none, which one search per secret tells."""
    if not any(form in line for form in _as_json(tuple(secrets))):
        return record, line
    where: list[str] = []
    data = mask(json.loads(line), secrets, where)
    if "metadata" in type(record).__struct_fields__:  # a result says where; a turn cannot
        data.setdefault("metadata", {})["masked"] = where
    record = convert(data, type(record))
    return record, encode(record)


def masked_turn(turn: TurnResult, secrets: Sequence[str]) -> TurnResult:
    """The turn as a listener may show it: `turn` itself when it holds no secret, else a
    masked copy (the result it ends up in is masked when it is kept)."""
    if not secrets:
        return turn
    return masked(turn, encode(turn), secrets)[0]
