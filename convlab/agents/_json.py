"""JSON for what agents send and receive: one library (msgspec) both ways, every number exact.

Reading agent and tool output must not change a number:
- an integer past 64 bits reads as that integer (orjson reads it as a float, so a 30-digit
  tool argument became `1.2345678901234568e+29`);
- a JSON `-0` reads as a negative zero (`-0.0`), as JavaScript reads it: intention-kernel
  compares with `isDeepStrictEqual`, where `-0` is not `0`. `-0.0` reads so already.

msgspec reads both integer cases exactly; a body that holds `-0` as a number (rare) is read
again by the json module, which can say how to read it. `benchmarks/bench_json.py` measures
this against orjson with the guard exact reading would need there.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

__all__ = ["dumps", "loads", "loads_exact", "recorded_arguments"]

_ENCODER = msgspec.json.Encoder(enc_hook=str)
_DECODER = msgspec.json.Decoder()
_NEG_ZERO_BYTES = re.compile(rb"-0(?![0-9.eE])")
_NEG_ZERO_TEXT = re.compile(r"-0(?![0-9.eE])")


def dumps(obj: Any) -> bytes:
    """JSON bytes, compact; a value JSON has no type for is written as its `str()`."""
    return _ENCODER.encode(obj)


def _int(text: str) -> int | float:
    return -0.0 if text == "-0" else int(text)


def loads_exact(data: bytes | str) -> Any:
    """Parse JSON with the json module, a `-0` read as `-0.0` (the slow, exact path)."""
    return json.loads(data, parse_int=_int)


def _has_neg_zero(data: bytes | str) -> bool:
    """Whether `-0` stands alone somewhere (not `-0.5`, `-01`, `-0e1`, nor a date's `-07`):
    each `-0` is looked at in place (model names hold dates, so a scan of the whole body for
    the pattern would run on nearly every reply)."""
    if isinstance(data, bytes):
        minus: Any = b"-0"
        pattern: Any = _NEG_ZERO_BYTES
    else:
        minus, pattern = "-0", _NEG_ZERO_TEXT
    at = data.find(minus)
    while at >= 0:
        if pattern.match(data, at):
            return True
        at = data.find(minus, at + 2)
    return False


def loads(data: bytes | str) -> Any:
    """Parse JSON bytes or text; integers stay exact and `-0` stays a negative zero.

    Raises:
        ValueError: The text is not JSON (NaN and Infinity are not JSON either), or nests
            deeper than the parser can follow (100,000 brackets): a body is read or refused,
            it never raises anything else.
    """
    try:
        value = _DECODER.decode(data)
        return loads_exact(data) if _has_neg_zero(data) else value
    except RecursionError:
        raise ValueError("JSON nested too deep to read") from None


def recorded_arguments(text: str) -> Any:
    """Tool-call arguments text as a call records it: a JSON object parsed (numbers exact),
    any other text (`""`, `null`, `[1, 2]`, text that is not JSON) kept as sent, so checks
    read what the model wrote (HoloDeck reads such text as `{"raw": <the text>}`)."""
    try:
        parsed = loads(text)
    except ValueError:
        return text
    return parsed if isinstance(parsed, dict) else text
