"""Recording keys never change: a cassette committed next to a suite must keep replaying.

The key of an HTTP call is the hash of its request as sorted, compact JSON in the json
module's spelling. The fast path writes it with msgspec when that gives the same bytes; these
tests hold the two spellings equal on random JSON (integers past 64 bits included, as an
agent's body now reads them exactly) and show that a float takes the json path.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from convlab.agents.cache import _canonical

SCALARS = st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def json_spelling(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@given(JSON)
def test_the_fast_key_text_is_the_json_modules(value: Any) -> None:
    parsed = msgspec.json.decode(msgspec.json.encode(value))  # what an agent's body reads as
    assert _canonical(["http", parsed, 0, 1], plain=True) == json_spelling(["http", parsed, 0, 1])


def test_floats_are_spelled_as_the_json_module_spells_them() -> None:
    body = {"temperature": 1e-07, "top_p": 1e16, "note": "1.5e3 in a string is text"}
    assert msgspec.json.encode(body) != json_spelling(body).encode()  # they differ here...
    assert _canonical(body, plain=True) == json_spelling(body)  # ...and the key does not
    assert _canonical({"say": "v1.2 e.g."}, plain=True) == json_spelling({"say": "v1.2 e.g."})
