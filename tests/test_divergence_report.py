"""`convlab why STORE [CASE]` and the reports' section on unstable cases: the same words as
`run.why()`, escaped for each place (a console, Markdown, HTML)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flaky_agents import dynamic_case, filer, flaky_agent, flaky_suite

import convlab as cl
from convlab.cli import main
from convlab.model import Suite

HOSTILE = "[x](javascript:a) <script>b</script>\x1b]0;p\x07\x1b[2J"


def hostile_user(messages: list[dict[str, Any]], ctx: Any) -> str:
    """A simulated user who says something hostile in every other run (then the case fails)."""
    n = int(ctx.instance.split("#")[1]) if "#" in ctx.instance else 0
    return HOSTILE if n % 2 else "I need to file a travel expense"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("why") / "store.jsonl"
    suite = Suite(id="s", cases=[*flaky_suite().cases, dynamic_case()])

    def agent(messages: list[dict[str, Any]], ctx: Any) -> Any:
        return filer(messages) if ctx.case.id == "dynamic-expense" else flaky_agent(messages, ctx)

    run = cl.run(suite, agent, simulator=hostile_user, runs=10, store=path, progress=False)
    return path, run


def test_convlab_why_prints_every_flaky_case_with_its_branches(store, capsys):
    path, run = store
    assert main(["why", str(path)]) == 0
    out = capsys.readouterr().out
    assert run.why("expense-policy") in out and "greet" not in out
    assert "branch 0 · turn 2 · agent · lookup_policy(amount, note)" in out
    assert "turn 2: lookup_policy(amount, note) → turn 3: create_expense(amount)" in out
    assert "dynamic-expense" in out and "a fork on the user's side" in out
    assert "\x1b" not in out and "\x07" not in out  # what the user said never drives a terminal
    assert "\\x1b]0;p\\x07" in out


def test_convlab_why_for_one_case_and_for_an_unknown_one(store, capsys):
    path, _ = store
    assert main(["why", str(path), "greet"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == "  All 10 runs passed; they took one path."
    assert main(["why", str(path), "gret"]) == 2
    err = capsys.readouterr().err
    assert "unknown case 'gret'. Did you mean 'greet'?" in err


def test_the_markdown_report_explains_unstable_cases(store, tmp_path):
    _, run = store
    text = run.save(tmp_path / "r.md").read_text(encoding="utf-8")
    section = text[text.index("## Why cases are unstable") : text.index("## Failures")]
    assert "### `expense-policy`" in section and "### `greet`" not in section
    assert "Runs that called lookup_policy at turn 2 passed" in section
    assert "<script>" not in section and "&lt;script&gt;" in section
    assert "\x1b" not in section and not re.search(r"(?<!\\)\]\(javascript:", section)
    assert "\\](javascript:a)" in section  # shown, escaped: never a link


def test_the_html_report_explains_unstable_cases(store, tmp_path):
    _, run = store
    page = run.save(tmp_path / "r.html").read_text(encoding="utf-8")
    section = page[page.index("<h2>Why cases are unstable</h2>") :]
    section = section[: section.index("<h2>Instances that did not pass</h2>")]
    assert "<h3><code>expense-policy</code></h3>" in section
    assert "Runs that called lookup_policy at turn 2 passed" in section
    assert "sankey" in section  # its chart
    assert "<script>b" not in page and "&lt;script&gt;b" in section
