"""JSON-in-a-reply benchmark: what `json_path` pays to find, parse and repair JSON.

Run from the project root:  python benchmarks/bench_extract.py [--quick]
Prints microseconds per reply and the ratio to `json.loads` of the same JSON, measured in
the same run (no pass/fail). Replies: valid JSON in a markdown fence, JSON an LLM broke
(missing comma, Python literals, cut off: repaired by json-repair), YAML, and prose (no JSON).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from convlab.checks._extract import extract_json

ITEMS = [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "ok": i % 2 == 0} for i in range(20)]
VALID = json.dumps({"need_search": True, "items": ITEMS})
REPLIES = {
    "fenced valid JSON": f"Here you are:\n```json\n{VALID}\n```\nAnything else?",
    "broken JSON (repaired)": VALID.replace('"ok": true', '"ok": True').replace(", ", " ", 3)[:-40],
    "YAML": "need_search: true\nitems:\n" + "".join(f"  - id: {i}\n" for i in range(20)),
    "prose (no JSON)": "I am sorry, I cannot find any expense with that number. " * 4,
}


def _per_call_us(fn: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    n = 200 if parser.parse_args().quick else 2000
    base = _per_call_us(lambda: json.loads(VALID), n)
    print(f"json.loads of the valid JSON ({len(VALID)} chars): {base:.1f} us (baseline)")
    for name, reply in REPLIES.items():
        us = _per_call_us(lambda reply=reply: extract_json(reply), n)
        found = "found" if extract_json(reply) is not None else "none"
        print(f"{name:<24} {us:9.1f} us  {us / base:6.1f}x baseline  ({found})")


if __name__ == "__main__":
    main()
