"""JSON on the HTTP path: what encoding a request and decoding its reply cost, per library.

Run from the project root:  python benchmarks/bench_json.py [--quick]

An OpenAI-compatible agent encodes each request body (the conversation and the tool
definitions), decodes each reply body, and decodes every tool call's `arguments` text. Every
number there must read exactly: an integer past 64 bits stays an integer, and a JSON `-0`
stays a negative zero (intention-kernel's strict equality tells it from `0`). orjson reads
such an integer as a float, so it needs a guard that sends those bodies to an exact parser;
msgspec and the json module read it exactly, and a `-0` needs the same small guard in all.

Printed: microseconds per request for each way (encode the request; decode the reply and
its arguments; the total; the best of 9 rounds, the ways taking turns in each), and the
total's ratio to the baseline measured in the same run:
plain orjson, as fast as it gets and wrong on big integers. The last column says whether the
way reads the test body exactly. No pass/fail.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from convlab.agents._json import dumps as convlab_dumps
from convlab.agents._json import loads as convlab_loads

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": "Look a figure up in the filings. " * 3,
            "parameters": {
                "type": "object",
                "properties": {"metric": {"type": "string"}, "year": {"type": "integer"}},
                "required": ["metric", "year"],
            },
        },
    }
    for i in range(6)
]
CONVERSATION = [
    {"role": "system", "content": "You are a careful financial analyst. " * 20},
    *(
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: " + "words " * 60}
        for i in range(10)
    ),
]
REQUEST = {"model": "gpt-4o-mini", "messages": CONVERSATION, "tools": TOOLS, "temperature": 0}
TEXT_REPLY = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1_767_225_600,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The net cash was 206,588. " * 12},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 1234, "completion_tokens": 87, "total_tokens": 1321},
}
ARGS = [
    json.dumps({"metric": "net cash from operating activities", "year": 2009, "scale": 1.5}),
    json.dumps({"a": 206588, "b": 181001}),
    json.dumps({"query": "what was the change?", "limit": 10, "filters": {"year": [2008, 2009]}}),
]
TOOL_REPLY = {
    **TEXT_REPLY,
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": a}}
                    for i, a in enumerate(ARGS)
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}
BODIES = {"text reply": TEXT_REPLY, "tool-call reply": TOOL_REPLY}
EXACT_TEST = b'{"v": 123456789012345678901234567890, "z": -0, "f": -0.0}'
"""A body only an exact reader reads right: a 30-digit integer and an integer -0."""

_BIG = re.compile(rb"[-0-9]{19}")
_NEG_ZERO = re.compile(rb"-0(?![0-9.eE])")


def _exact_fallback(data: bytes) -> Any:
    return json.loads(data, parse_int=lambda s: -0.0 if s == "-0" else int(s))


def orjson_guarded(data: bytes) -> Any:
    """orjson, with a body holding a long digit run or a `-0` sent to the json module."""
    if _BIG.search(data) or (b"-0" in data and _NEG_ZERO.search(data)):
        return _exact_fallback(data)
    return orjson.loads(data)


def orjson_dumps_guarded(value: Any) -> bytes:
    try:
        out: bytes = orjson.dumps(value, default=str)
    except TypeError:  # an integer past 64 bits
        out = json.dumps(value, default=str, separators=(",", ":")).encode()
    return out


def json_loads(data: bytes) -> Any:
    return _exact_fallback(data)


def json_dumps(value: Any) -> bytes:
    return json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False).encode()


WAYS: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]] = {
    "orjson (baseline, inexact)": (lambda v: orjson.dumps(v, default=str), orjson.loads),
    "orjson + guard": (orjson_dumps_guarded, orjson_guarded),
    "msgspec (convlab.agents._json)": (convlab_dumps, convlab_loads),
    "msgspec, no -0 guard": (
        lambda v: msgspec.json.encode(v, enc_hook=str),
        msgspec.json.decode,
    ),
    "json module": (json_dumps, json_loads),
}


def _decode_reply(loads: Callable[[bytes], Any], body: bytes) -> None:
    data = loads(body)
    for call in data["choices"][0]["message"].get("tool_calls") or []:
        loads(call["function"]["arguments"].encode())


def _best_us(fns: dict[str, Callable[[], Any]], n: int, rounds: int = 9) -> dict[str, float]:
    """Microseconds per call of each function: the best of `rounds`, the functions taking
    turns in every round (so a busy moment of the machine hits them all alike)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / n * 1e6)
    return best


def _exact(loads: Callable[[bytes], Any]) -> bool:
    got = loads(EXACT_TEST)
    z = got["z"]
    return (
        got["v"] == 123456789012345678901234567890
        and isinstance(got["v"], int)
        and (z == 0 and str(z).startswith("-"))
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    n = 300 if parser.parse_args().quick else 2000
    request = orjson.dumps(REQUEST)
    print(f"best of 9 rounds of {n}; encode = the request body ({len(request)} bytes)")
    encode = _best_us({w: lambda d=d: d(REQUEST) for w, (d, _) in WAYS.items()}, n)
    for name, reply in BODIES.items():
        body = orjson.dumps(reply)
        decode = _best_us(
            {w: lambda lo=lo, b=body: _decode_reply(lo, b) for w, (_, lo) in WAYS.items()}, n
        )
        print(f"\n{name} ({len(body)} bytes), microseconds per request:")
        print(f"  {'':<32} {'encode':>8} {'decode':>8} {'total':>8}  ratio to the baseline")
        base = 0.0
        for way, (_, loads) in WAYS.items():
            total = encode[way] + decode[way]
            base = base or total
            exact = "exact" if _exact(loads) else "INEXACT"
            print(
                f"  {way:<32} {encode[way]:8.2f} {decode[way]:8.2f} {total:8.2f}  "
                f"{total / base:5.2f}x  {exact}"
            )


if __name__ == "__main__":
    main()
