"""The wall-clock time as results record it: ISO text to the millisecond, in UTC."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

__all__ = ["now"]


def now() -> str:
    """The time as ISO text to the millisecond (several cases start within one: the text
    is made once per millisecond)."""
    ms = time.time_ns() // 1_000_000
    if ms != _last[0]:
        at = datetime.fromtimestamp(ms // 1000, UTC).replace(microsecond=ms % 1000 * 1000)
        _last[:] = ms, at.isoformat(timespec="milliseconds")
    return str(_last[1])


_last: list[Any] = [-1, ""]
"""The millisecond `now` last wrote, and its text."""
