"""Durations: reading one a user wrote (`30s`, `2m30s`) and measuring one (elapsed ms)."""

from __future__ import annotations

import re
import time

__all__ = ["elapsed_ms", "parse_duration"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: str | float | int) -> float:
    """Seconds from `90`, `"30s"`, `"2m30s"`, `"1.5h"` or `"250ms"` (Go duration syntax).

    Raises:
        ValueError: If the text is not a duration.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a duration: {value!r} (use e.g. '30s', '2m30s', '1h')")
    return total


def elapsed_ms(start: float) -> float:
    """Milliseconds since `start` (a `time.perf_counter()` reading), to the microsecond:
    what results record of a duration or a latency."""
    return round((time.perf_counter() - start) * 1000, 3)
