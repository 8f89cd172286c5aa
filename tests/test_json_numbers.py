"""Numbers in what agents send and receive read exactly (convlab.agents._json).

An integer past 64 bits stays that integer (Python's json module reads it so, and HoloDeck's
`_parse_tool_arguments` uses it); a JSON `-0` stays a negative zero, as JavaScript's
`JSON.parse` reads it, because intention-kernel compares with `isDeepStrictEqual`, where
`-0` is not `0`. A recording replays the body the live call read.
"""

from __future__ import annotations

import math

import pytest

from convlab.agents._cache_files import _json_or_text
from convlab.agents._json import dumps, loads, recorded_arguments

BIG = 123456789012345678901234567890


def negative_zero(value: object) -> bool:
    return isinstance(value, float) and value == 0 and math.copysign(1, value) < 0


def test_an_integer_past_64_bits_stays_an_integer() -> None:
    value = loads(b'{"v": 123456789012345678901234567890}')["v"]
    assert value == BIG and type(value) is int
    assert loads('{"v": -123456789012345678901234567890}')["v"] == -BIG
    assert loads(dumps({"v": BIG})) == {"v": BIG} and dumps(BIG) == str(BIG).encode()


@pytest.mark.parametrize(
    ("data", "negative"),
    [
        (b"-0", True),
        (b"[1, -0 ]", True),
        ('{"a": -0}', True),
        (b"-0.0", True),
        (b"-0e0", True),
        (b"0", False),
        (b'"2024-07-18 and x-0"', False),
        (b"-0.5", False),
        (b'{"model": "gpt-4o-mini-2024-07-18", "n": 0}', False),
    ],
)
def test_minus_zero_stays_a_negative_zero(data: bytes | str, negative: bool) -> None:
    value = loads(data)
    found = [v for v in (value if isinstance(value, list) else [value]) if negative_zero(v)]
    if isinstance(value, dict):
        found = [v for v in value.values() if negative_zero(v)]
    assert bool(found) is negative


def test_text_that_is_not_json_is_a_value_error() -> None:
    for bad in (b"", b"NaN", b"{", b'"\\ud800"', b"1e1000000"):
        with pytest.raises(ValueError):
            loads(bad)


@pytest.mark.parametrize(
    ("text", "recorded"),
    [
        ('{"v": 123456789012345678901234567890}', {"v": BIG}),
        ("", ""),
        ("null", "null"),
        ("[1, 2]", "[1, 2]"),
        ("not json", "not json"),
    ],
)
def test_tool_arguments_are_recorded_as_the_model_wrote_them(text: str, recorded: object) -> None:
    assert recorded_arguments(text) == recorded


def test_a_recorded_body_reads_as_the_live_one() -> None:
    body = b'{"v": 123456789012345678901234567890, "z": -0}'
    value, is_json = _json_or_text(body)
    assert is_json and value["v"] == BIG and negative_zero(value["z"])
    assert loads(dumps(value)) == loads(body) and negative_zero(loads(dumps(value))["z"])
