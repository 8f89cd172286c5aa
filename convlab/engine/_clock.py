"""The wall-clock time as results record it: ISO text to the millisecond, in UTC."""

from __future__ import annotations

import time
from datetime import UTC, datetime

__all__ = ["now"]


def now() -> str:
    """The time as ISO text to the millisecond, e.g. `2026-12-01T18:13:00.921+00:00`.

    Cases start thousands of times a second: the date and time of day are formatted once
    per second, the milliseconds are appended.
    """
    ms = time.time_ns() // 1_000_000
    second, milli = divmod(ms, 1000)
    if second != _second[0]:
        _second[:] = [second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_second[1]}.{milli:03d}+00:00"


_second: list[int | str] = [-1, ""]
"""The second `now` last formatted, and its text."""
