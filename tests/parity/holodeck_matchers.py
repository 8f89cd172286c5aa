"""Run HoloDeck 0.7.1's own matcher functions and convlab's on the same rows; print both.

Not part of the test run (it needs a second venv with HoloDeck installed, which must never
go into convlab's). Usage:

    python3 -m venv /tmp/hdvenv
    /tmp/hdvenv/bin/pip install holodeck-ai==0.7.1 openai-agents==0.17.4 exceptiongroup \
        openai==2.44.0
    .venv/bin/python tests/parity/holodeck_matchers.py /tmp/hdvenv/bin/python

It exits 1 when a row disagrees that docs/holodeck.md does not list as deliberate, so it
can gate a CI job that has the second venv.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from convlab.checks.toolargs import match_fuzzy, match_literal, match_regex
from convlab.checks.tools import holodeck_arguments

FUZZY: list[tuple[str, Any]] = [
    ("Hello World", "helloworld"),
    ("hello world", "hello\tworld"),
    ("New_York", "new york"),
    ("a\u00a0b", "a b"),
    ("206588", "206\u202f588"),
    ("206588", "206 588"),
    ("206588", "206,588"),
    ("206,588.5", "206588.50"),
    ("14.14%", 0.1414),
    ("YES", " yes "),
    ("none", None),
    ("yes", True),
    ("new york", "New  York"),
    ("a b", "a\n\nb"),
    ("ab", "a_b"),
    ("ab", "a b"),
    ("1 000", 1000),
    ("50 %", 0.5),
    ("a\u202fb", "ab"),
    ("", " "),
    ("1e3", "1000"),
    ("-0", "0"),
]
LITERAL: list[tuple[Any, Any]] = [
    (206588, 206588.0),
    (True, 1),
    ("206588", 206588),
    ([1, 2], [1.0, 2.0]),
    ({"a": 1}, {"a": 1, "b": 2}),
    ({"a": [1]}, {"a": [1.0]}),
    (None, None),
    (0, False),
]
REGEX: list[tuple[str, Any]] = [
    (r"^181001(\.0+)?$", 181001.0),
    ("True", True),
    ("2009", "in 2009"),
    ("None", None),
]
ARGS: list[Any] = ['{"a": 1}', "[1, 2]", "not json", "5", None, ""]

HOLODECK = r"""
import json, re, sys
from holodeck.lib.test_runner.tool_arg_matcher import match_fuzzy, match_literal, match_regex
from holodeck.lib.backends.openai_agents_backend import _parse_tool_arguments
rows = json.load(sys.stdin)
print(json.dumps({
    "fuzzy": [match_fuzzy(p, a) for p, a in rows["fuzzy"]],
    "literal": [match_literal(e, a) for e, a in rows["literal"]],
    "regex": [match_regex(re.compile(p), a) for p, a in rows["regex"]],
    "args": [_parse_tool_arguments(a) for a in rows["args"]],
}))
"""


def convlab_answers() -> dict[str, list[Any]]:
    """convlab's answers for every row."""
    return {
        "fuzzy": [match_fuzzy(p, a) for p, a in FUZZY],
        "literal": [match_literal(e, a) for e, a in LITERAL],
        "regex": [match_regex(p, a) for p, a in REGEX],
        "args": [holodeck_arguments(a) for a in ARGS],
    }


def holodeck_answers(python: str) -> dict[str, list[Any]]:
    """HoloDeck 0.7.1's answers, computed by its own code in the other interpreter."""
    rows = {"fuzzy": FUZZY, "literal": LITERAL, "regex": REGEX, "args": ARGS}
    out = subprocess.run(
        [python, "-c", HOLODECK],
        input=json.dumps(rows),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    answers: dict[str, list[Any]] = json.loads(out.stdout)
    return answers


def main(argv: list[str]) -> int:
    """Print one line per row; return 1 on any disagreement."""
    if len(argv) != 2:
        print(__doc__)
        return 2
    ours, theirs = convlab_answers(), holodeck_answers(argv[1])
    rows = {"fuzzy": FUZZY, "literal": LITERAL, "regex": REGEX, "args": ARGS}
    bad = 0
    for group, items in rows.items():
        for item, a, b in zip(items, ours[group], theirs[group], strict=True):
            same = a == b
            bad += not same
            print(f"{'same' if same else 'DIFF'}  {group:8} {item!r}: convlab={a!r} holodeck={b!r}")
    print(f"{bad} disagreement(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
