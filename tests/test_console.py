"""Text progress: a line per instance in terminals, only what did not pass in notebooks."""

from __future__ import annotations

import io

import convlab as cl
from convlab.model import Case, Message, Suite
from convlab.report.console import ConsoleProgress

SUITE = Suite(
    id="s",
    cases=[
        Case(id="good", input=[Message(content="a")]),
        Case(
            id="bad", input=[Message(content="b")], assertions=[{"kind": "contains", "value": "z"}]
        ),
    ],
)


def _output(quiet: bool) -> str:
    buf = io.StringIO()
    cl.run(SUITE, lambda m: "echo <b>", progress=ConsoleProgress(buf, quiet=quiet))
    return buf.getvalue()


def test_terminal_progress_has_a_line_per_instance_and_a_summary():
    out = _output(quiet=False)
    assert "► [good] PASSED" in out and "► [bad] FAILED" in out
    assert "[2/2]" in out and "Passed: 1" in out and "Pass rate: 50.0%" in out


def test_quiet_progress_lists_only_what_did_not_pass():
    out = _output(quiet=True)
    assert "[good]" not in out and "► [bad] FAILED" in out and "Failed: 1" in out
