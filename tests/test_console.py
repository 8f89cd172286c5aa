"""The console a user reads: `yao agent test`'s header, lines, trees and summary, one source of
totals (`Run.summary`), whole trees under parallel runs, colours only where wanted, nothing raw."""

from __future__ import annotations

import asyncio
import io
import random
import re
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.engine.events import CaseFinished, CaseStarted, Event
from convlab.model import Case, Message, Suite
from convlab.model.run import Run
from convlab.model.suite import Turn, TurnInput
from convlab.report._console_render import instance
from convlab.report._console_text import ASCII, UNICODE, Style, clean
from convlab.report.console import ConsoleProgress

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SGR = re.compile(r"\x1b\[[0-9;]*m")
EVIL = "\x1b[31mRED\x1b[0m\x1b]0;title\x07"

SUITE = Suite(
    id="s",
    cases=[
        Case(id="good", input=[Message(content="a")]),
        Case(
            id="bad", input=[Message(content="b")], assertions=[{"kind": "contains", "value": "z"}]
        ),
    ],
)


class Tty(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _run(suite: Any, agent: Any, **kw: Any) -> tuple[Run, str]:
    console_kw = {k: kw.pop(k) for k in ("verbose", "quiet", "color", "glyphs") if k in kw}
    buf = kw.pop("stream", None) or io.StringIO()
    run = cl.run(suite, agent, progress=ConsoleProgress(stream=buf, **console_kw), **kw)
    return run, buf.getvalue()


def _summary(out: str) -> dict[str, str]:
    block = out.split(" Summary\n", 1)[1]
    return dict(re.findall(r"^  ([A-Z][a-z ]+):\s+(.*)$", block, re.M))


def test_terminal_progress_has_a_line_per_instance_and_a_summary() -> None:
    _, out = _run(SUITE, lambda m: "echo <b>", quiet=False, parallel=1)
    assert "Agent Test" in out and "Instances: 2" in out and "Running Tests" in out
    assert "► [good] a PASSED" in out and "► [bad] b FAILED" in out
    assert "✗ contains:" in out  # the failed check, under its line
    assert _summary(out)["Passed"] == "1" and _summary(out)["Pass rate"] == "50.0%"
    assert "✗ 1 FAILED" in out


def test_quiet_progress_lists_only_what_did_not_pass() -> None:
    _, out = _run(SUITE, lambda m: "echo <b>", quiet=True)
    assert "[good]" not in out and "► [bad] b FAILED" in out and _summary(out)["Failed"] == "1"
    assert "Running Tests" not in out  # no header block in a notebook


def test_console_totals_and_pass_rate_are_run_summary() -> None:
    run, out = _run(EXAMPLES / "catalog", "demo:catalog", quiet=False)
    sm, shown = run.summary, _summary(out)
    assert shown["Pass rate"] == f"{sm['pass_rate']:.1f}%" == "66.7%"
    assert shown["Total"] == str(sm["total"]) and shown["Passed"] == str(sm["passed"])
    assert shown["Failed"] == str(sm["failed"]) and shown["Errors"] == str(sm["errors"])
    assert shown["Cases"] == f"{sm['cases']} (3 stable, 3 one run)"  # the summary's stability


def test_expense_standard_lines_and_dynamic_trees() -> None:
    _, out = _run(EXAMPLES / "expense", "demo:expense", quiet=False)
    assert "Agent: demo:expense" in out
    assert re.search(r"^► \[expense-greeting\] Hello PASSED \(\d+\.\ds\)$", out, re.M)
    # a dynamic case: turns with user -> agent, tool calls, checkpoints at their turn
    tree = out.split("► [expense-dynamic] ", 1)[1].split("\n► ", 1)[0]
    assert '├─ Turn 1: "Help me file an expense" → "' in tree
    assert "│  └─ ✓ checkpoint: ask_type" in tree
    assert "tool: create_expense(" in tree and "3 turns, 3/4 checkpoints" in tree
    failing = out.split("► [expense-dynamic-receipt] ", 1)[1].split("\n► ", 1)[0]
    assert "✗ checkpoint: ask_receipt not reached" in failing and "\n  FAILED (" in failing
    limit = out.split("► [expense-policy-limit] ", 1)[1].split("\n► ", 1)[0]
    assert "✗ contains: expenses over $5000" in limit


def test_turn_based_cases_with_variants_and_errors_are_trees() -> None:
    _, out = _run(EXAMPLES / "catalog", "demo:catalog", quiet=False)
    assert "► [browse-and-select search=direct]" in out
    assert '├─ Turn 1 [search]: "Show available products" → "' in out
    assert "EVALUATION_SELECTION_AMBIGUOUS" in out and "\n  ERROR (" in out


def test_holodeck_multi_turn_and_code_tests_are_shown() -> None:
    _, out = _run(EXAMPLES / "finance", "demo:finance", quiet=False)
    assert "► [convfinqa-0]\n" in out and "Turn 4:" in out
    assert "tool: subtract(" in out
    run, out = _run(EXAMPLES / "cloud_drive", "demo:cloud_drive", quiet=False)
    assert "test_delete_without_user" in out and "FAILED" in out
    assert _summary(out)["Total"] == str(run.summary["total"])


def test_parallel_trees_are_never_interleaved() -> None:
    turns = [Turn(input=TurnInput(text=f"step {i}")) for i in range(4)]
    suite = Suite(id="p", cases=[Case(id=f"c{n}", mode="turns", turns=turns) for n in range(12)])
    seen: list[tuple[Any, str, str | None]] = []
    modes: dict[Any, str] = {}
    buf = io.StringIO()
    console = ConsoleProgress(stream=buf, quiet=False)

    def both(event: Event) -> None:
        if isinstance(event, CaseStarted):
            modes[event.key] = event.mode
        if isinstance(event, CaseFinished):
            seen.append((event.result, event.label, modes.get(event.result.key)))
        console(event)

    async def agent(messages: list[Message]) -> str:
        await asyncio.sleep(random.uniform(0, 0.01))
        return f"echo {messages[-1].text()}"

    run = cl.run(suite, agent, parallel=8, progress=both)
    out = buf.getvalue()
    assert len(seen) == len(run.results) == 12
    for result, label, mode in seen:
        block = "\n".join(instance(result, label, mode, None, UNICODE, Style(False)))
        assert block + "\n" in out  # each tree printed whole, in one piece
    assert out.count("► [") == 12 and "Agent Test (Parallel: 8)" in out


def test_stability_table_when_each_case_runs_more_than_once() -> None:
    run, out = _run(EXAMPLES / "expense", "demo:expense", runs=3, quiet=False)
    assert "Stability (3 runs per case)" in out
    assert re.search(r"Case\s+Runs\s+Passed\s+Pass rate\s+Stability\n", out)
    assert re.search(r"expense-policy-limit\s+3\s+0\s+0\.0%\s+always fails\n", out)
    assert re.search(r"expense-greeting\s+3\s+3\s+100\.0%\s+stable\n", out)
    assert "unstable" not in out  # two cases fail every run: deterministic, not unstable
    assert _summary(out)["Cases"] == "12 (10 stable, 2 always fails)"
    assert _summary(out)["Pass rate"] == f"{run.summary['pass_rate']:.1f}%"
    _, once = _run(EXAMPLES / "expense", "demo:expense", quiet=False)
    assert "Stability" not in once


def test_colours_only_on_a_tty_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, plain = _run(SUITE, lambda m: "x")
    assert "\x1b" not in plain  # a file or a pipe gets no escapes at all
    _, tty = _run(SUITE, lambda m: "x", stream=Tty(), quiet=False)
    assert SGR.search(tty) and "[Progress: " in tty  # colours and the live progress line
    monkeypatch.setenv("NO_COLOR", "")
    _, no_color = _run(SUITE, lambda m: "x", stream=Tty(), quiet=False)
    assert not SGR.search(no_color) and "PASSED" in no_color
    _, forced = _run(SUITE, lambda m: "x", color=True, quiet=False)
    assert SGR.search(forced)


def test_ascii_glyphs_for_terminals_without_unicode() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", write_through=True)
    run = cl.run(
        EXAMPLES / "expense",
        "demo:expense",
        progress=ConsoleProgress(stream=stream, quiet=False),
    )
    out = raw.getvalue().decode("ascii")  # would raise on any non-ASCII byte
    assert run.summary["total"] and "> [expense-greeting] Hello PASSED" in out
    assert "+-- Turn 1: " in out and " -> " in out and "\u2192" not in out
    _, forced = _run(SUITE, lambda m: "caf\u00e9", glyphs="ascii", quiet=False)
    assert "> [good]" in forced and "►" not in forced
    with pytest.raises(ValueError, match="glyphs"):
        ConsoleProgress(stream=io.StringIO(), glyphs="emoji")


def test_control_characters_never_reach_the_terminal() -> None:
    suite = Suite(
        id="evil",
        cases=[
            Case(id=f"case{EVIL}", input=[Message(content=f"hi{EVIL}")]),
            Case(
                id=f"turns{EVIL}\r",
                mode="turns",
                turns=[
                    Turn(
                        input=TurnInput(text="hello"),
                        assertions=[{"kind": "contains", "value": "nothing like this"}],
                    )
                ],
            ),
        ],
    )
    for verbose in (False, True):
        _, out = _run(suite, lambda m: f"reply {EVIL} \x9b2J done", verbose=verbose, quiet=False)
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\r" not in out
        assert "\\x1b[31mRED\\x1b[0m\\x1b]0;title\\x07" in out  # still readable
    assert clean("a\tb\nc\x00") == "a\tb\nc\\x00"


def test_existing_callers_keep_working() -> None:
    ConsoleProgress(verbose=True, quiet=False)  # cli.py
    assert ConsoleProgress().stream is not None  # api.py's text progress
    assert ASCII.arrow == "->"


def test_a_text_progress_run_computes_its_summary_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The end of a run with text progress, the history, the card, str() and the Markdown
    report all read the one summary kept with the finished run: one pass over the results."""
    import convlab.analysis.rollup as rollups

    passes: list[int] = []
    real = rollups.rollup

    def counted(run: Run, count_errors_as: str = "failed") -> Any:
        passes.append(len(run.results))
        return real(run, count_errors_as)

    monkeypatch.setattr(rollups, "rollup", counted)
    run, out = _run(EXAMPLES / "expense", "demo:expense", runs=3, quiet=False, history=True)
    assert "Stability (3 runs per case)" in out and _summary(out)["Pass rate"] == "83.3%"
    assert passes == [len(run.results)]  # console summary, stability table, history: one pass
    assert run.summary["passed"] == 30 and "83.3%" in str(run)
    assert "**83.3%**" in run.save(tmp_path / "report.md").read_text()
    assert passes == [len(run.results)]
    run.results = list(run.results)[:-1]  # a changed run is summed up again
    assert run.summary["total"] == len(run.results) and len(passes) == 2
