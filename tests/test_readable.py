"""One formatter of what people read (convlab._readable): the same figure in every view, and
no agent text reaching a terminal raw."""

from __future__ import annotations

import io
import itertools
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab._readable import MISSING, cost, millis, pct, shorten, visible
from convlab.model import Case, Message, Suite
from convlab.report.console import ConsoleProgress

EVIL = "\x1b[2J\x1b]0;pwned\x07\x00\x9b31m\x9d0;t\x07"
"""Clear the screen, an OSC title ended by BEL, NUL, a one-byte C1 CSI and C1 OSC."""
RAW = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Every C0/C1 control character but tab and newline (the layout's)."""

SUITE = Suite(
    id="rates",
    cases=[
        Case(
            id="flaky",
            input=[Message(content="flaky")],
            assertions=[{"kind": "contains", "value": "ok"}],
        ),
        Case(
            id="solid",
            input=[Message(content="solid")],
            assertions=[{"kind": "contains", "value": "ok"}],
        ),
    ],
)


def _two_of_three() -> Any:
    """An agent passing `flaky` on its 1st and 2nd call but not the 3rd, `solid` always."""
    calls: defaultdict[str, itertools.count[int]] = defaultdict(itertools.count)

    def agent(messages: list[dict[str, Any]]) -> str:
        message = messages[-1]["content"]
        n = next(calls[message])
        return "ok" if message == "solid" or n % 3 != 2 else "no"

    return agent


def test_the_percentage_rule() -> None:
    assert [pct(v) for v in (200 / 3, 100, 0, 50, 99.96, 0.04)] == [
        "66.7%",
        "100.0%",
        "0.0%",
        "50.0%",
        ">99.9%",
        "<0.1%",
    ]
    assert pct(None) == pct(float("nan")) == MISSING == "-"
    assert cost(0.01234) == "$0.0123" and cost(1234.5) == "$1,234.50" and cost(None) == "-"
    assert millis(0.42) == "0.42 ms" and millis(120.4) == "120 ms" and millis(1234) == "1.23 s"
    assert shorten("a  long\nline that goes on", 8) == "a long …"
    assert visible("a\tb\nc\x1b[2J\x07") == "a\tb\nc\\x1b[2J\\x07"


def test_two_of_three_reads_the_same_in_every_view(tmp_path: Path) -> None:
    buf = io.StringIO()
    run = cl.run(
        SUITE,
        _two_of_three(),
        runs=3,
        parallel=1,
        progress=ConsoleProgress(stream=buf, quiet=False),
    )
    rates = {r["case_id"]: r["pass_rate"] for r in run.stability().to_dict("records")}
    assert rates["flaky"] == pytest.approx(200 / 3)

    card = run._repr_mimebundle_()
    assert "66.7%" in card["text/html"] and "66.7%" in card["text/plain"]

    fig = run.plot.pass_rates()
    hovers = {row[0]: row[6] for trace in fig.data for row in trace.customdata or ()}
    assert hovers == {"flaky": "66.7%", "solid": "100.0%"}  # never "67%" or "100%"

    console = buf.getvalue()
    flaky_row = next(line for line in console.splitlines() if line.strip().startswith("flaky"))
    assert "66.7%" in flaky_row
    assert re.search(r"Pass rate:\s+83\.3%", console)

    md = run.save(tmp_path / "run.md").read_text(encoding="utf-8")
    assert "**83.3%**" in md and "| 66.7% |" in md and "| 100.0% |" in md


def _hostile(messages: list[dict[str, Any]]) -> str:
    if "boom" in messages[-1]["content"]:
        raise RuntimeError(f"agent broke {EVIL}")
    return f"reply {EVIL} done"


def _assert_inert(text: str, where: str) -> None:
    raw = sorted({f"\\x{ord(c):02x}" for c in RAW.findall(text)})
    assert not raw, f"{where} holds raw control characters {raw}: {text!r}"


def test_no_text_view_lets_a_control_character_through() -> None:
    suite = Suite(
        id=f"evil{EVIL}",
        cases=[
            Case(
                id=f"case{EVIL}",
                input=[Message(content="hi")],
                assertions=[{"kind": "contains", "value": f"absent{EVIL}"}],
            ),
            Case(id="raises", input=[Message(content="boom")]),
        ],
    )
    run = cl.run(suite, _hostile, progress=False)
    assert EVIL in (run.results[0].turns[-1].observation.text or "")  # kept as it came
    _assert_inert(str(run), "print(run)")
    _assert_inert(repr(run), "repr(run)")
    _assert_inert(run._repr_mimebundle_()["text/plain"], "the run's text/plain")
    _assert_inert(str(run.summary), "print(run.summary)")

    exp = cl.run(suite, {f"v{EVIL}": _hostile, "plain": _hostile}, progress=False)
    _assert_inert(str(exp), "print(exp)")
    _assert_inert(repr(exp), "repr(exp)")
    _assert_inert(exp._repr_mimebundle_()["text/plain"], "the experiment's text/plain")

    for message in ("hi", "boom"):
        answer = cl.ask(_hostile, message, {"type": "contains", "value": f"x{EVIL}"})
        _assert_inert(str(answer), f"print(cl.ask(..., {message!r}))")
        _assert_inert(repr(answer), f"repr(cl.ask(..., {message!r}))")
        _assert_inert(answer._repr_mimebundle_()["text/plain"], "the answer's text/plain")
        assert "\\x1b[2J" in str(answer)  # shown, still readable


def test_an_error_message_quoting_agent_text_is_inert() -> None:
    error = cl.AgentError(f"the agent said {EVIL}")
    _assert_inert(str(error), "str(AgentError)")
    assert "\\x1b]0;pwned\\x07" in str(error)
