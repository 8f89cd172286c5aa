"""The finance suite's tools, run by HoloDeck (function tools) and by convlab (local tools).

Parameters carry no type hints on purpose: neither side validates them, so the scripted model
can send text, numbers or dates and each tool records what it got.
"""

from __future__ import annotations

import json
from typing import Any

FIGURES = {
    ("net cash from operating activities", "2009"): 206588,
    ("net cash from operating activities", "2008"): 181001,
    ("minimum lease payments", "2004"): 78,
    ("minimum lease payments", "2003"): 83,
    ("total minimum lease payments", "all"): 464,
}


def _number(value: Any) -> float:
    return float(str(value).replace(",", "").replace(" ", ""))


def lookup_figure(metric, year="all"):  # type: ignore[no-untyped-def]
    """Look a reported figure up by metric name and year."""
    found = FIGURES.get((str(metric).lower(), str(year)))
    return json.dumps({"metric": metric, "year": str(year), "value": found})


def add(a, b):  # type: ignore[no-untyped-def]
    """a + b."""
    return str(_number(a) + _number(b))


def subtract(a, b):  # type: ignore[no-untyped-def]
    """a - b."""
    return str(_number(a) - _number(b))


def divide(a, b):  # type: ignore[no-untyped-def]
    """a / b."""
    return str(_number(a) / _number(b))


def book_meeting(city, day):  # type: ignore[no-untyped-def]
    """Book an analyst meeting in a city on a day."""
    return f"booked {city} {day}"


def store_reference(v=None):  # type: ignore[no-untyped-def]
    """Store a filing's reference number."""
    return f"stored {v}"


ALL = [lookup_figure, add, subtract, divide, book_meeting, store_reference]
