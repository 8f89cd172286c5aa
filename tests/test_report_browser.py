"""`convlab report` output in a real browser (Debian chromium driven by playwright), offline.

Every request that is not `file://` is aborted and recorded: the report must render with no
network. Checks: the summary card shows the counts, a table header click re-sorts the rows,
every Plotly chart draws its SVG with traces, no script error, and hostile agent replies
(`<img onerror>`, `<script>`) show as text and run nothing. A full-page screenshot is kept in
tests/artifacts/report.png for a person to look at.

This test never skips: without chromium or the playwright package it fails and says what to
install (`.ci/run` installs chromium; playwright is in the `test` extra).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from offline_browser import Opened
from theme_pages import contrast, describe

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
HOSTILE_REPLY = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>'
HOSTILE_SUITE = (
    '{"id": "xss-<img src=x onerror=window.__pwned=4>", '
    '"input": "hi <script>window.__pwned=5</script>", '
    '"expected": "<b>bold</b> <img src=x onerror=window.__pwned=6>"}\n'
    '{"id": "plain", "input": "hello", "expected": "hello"}\n'
)


def _report(src: Path, out: Path) -> None:
    """`convlab report SRC -o OUT` in a subprocess, as a user (or CI) runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "convlab.cli", "report", str(src), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.is_file()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The quickstart report, and a hostile run's reports (notebook-made and standalone)."""
    import convlab as cl

    tmp = tmp_path_factory.mktemp("reports")
    assert QUICKSTART.is_file(), f"{QUICKSTART} is missing"
    out = {"quickstart": tmp / "out.html"}
    _report(QUICKSTART, out["quickstart"])
    (tmp / "hostile.jsonl").write_text(HOSTILE_SUITE)

    def agent(messages: list[dict[str, Any]]) -> str:
        return HOSTILE_REPLY

    run = cl.run(cl.load(tmp / "hostile.jsonl"), agent, progress=False)
    run.save(tmp / "hostile.json")
    out["hostile"] = tmp / "hostile.html"
    _report(tmp / "hostile.json", out["hostile"])
    out["standalone"] = run.save(tmp / "standalone.html")
    return out


def _first_column(page: Any, table: Any) -> list[str]:
    return [c.strip() for c in table.locator("tbody tr td:first-child").all_inner_texts()]


def test_quickstart_report_renders_offline(browser, reports):
    opened = Opened(browser, reports["quickstart"])
    opened.settle()
    page = opened.page

    run_card = page.locator(".cl-card", has_text=re.compile(r"\d+\s+instances"))
    assert run_card.count() >= 1, "no run summary card"
    card = run_card.first.inner_text()
    total = re.search(r"(\d+)\s+instances", card)
    assert total and int(total.group(1)) > 0, card
    assert re.search(r"\d+\s+passed", card), card

    tables = page.locator("table.dataTable")
    assert tables.count() >= 1
    sortable = None
    for i in range(tables.count()):
        t = tables.nth(i)
        if len(set(_first_column(page, t))) > 1:
            sortable = t
            break
    assert sortable is not None, "no table with distinct values in its first column"
    before = _first_column(page, sortable)
    header = sortable.locator("thead th").first
    after = before
    for _ in range(2):  # ascending, then descending: one of them changes the order
        header.click()
        page.wait_for_timeout(200)
        after = _first_column(page, sortable)
        if after != before:
            break
    assert after != before, f"clicking the header did not re-sort: {before}"
    assert after in (sorted(after), sorted(after, reverse=True)), after

    charts = page.locator(".plotly-graph-div")
    assert charts.count() >= 1
    for i in range(charts.count()):
        chart = charts.nth(i)
        assert chart.locator(".main-svg").count() >= 1, f"chart {i} drew no SVG"
        assert chart.locator("g.trace").count() >= 1, f"chart {i} has no traces"

    assert "application/vnd.jupyter.widget-state+json" not in page.content()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    charts.first.screenshot(path=str(ARTIFACTS / "chart.png"))
    assert opened.left == [], f"requests left the page: {opened.left}"
    assert opened.failed == [], f"requests failed: {opened.failed}"
    assert opened.errors == [], f"script errors: {opened.errors}"
    page.close()


@pytest.mark.parametrize("which", ["hostile", "standalone"])
def test_hostile_agent_text_runs_nothing(browser, reports, which):
    opened = Opened(browser, reports[which])
    opened.settle()
    page = opened.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    text = page.locator("body").inner_text()
    assert HOSTILE_REPLY in text  # shown as text, not parsed as markup
    assert "xss-<img src=x onerror=window.__pwned=4>" in text
    assert page.locator("main img[src='x'], main img[onerror]").count() == 0
    assert opened.left == [], f"requests left the page: {opened.left}"
    assert not [u for u in opened.failed if u.endswith("/x")], opened.failed
    assert opened.errors == [], f"script errors: {opened.errors}"
    page.close()


HOSTILE_PARTS = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=2">',
    '<a href="javascript:window.__pwned=3">click</a>',
    "[x](javascript:window.__pwned=4)",
    "red \x1b[31mALERT\x1b[0m title \x1b]0;t\x07 done",
]
"""Markup, `javascript:` links (HTML and Markdown) and terminal escapes, in one agent reply."""


@pytest.fixture(scope="module")
def hostile_links(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A run whose agent answers HOSTILE_PARTS: `run.save(x.html)` and `convlab report`."""
    import json

    import convlab as cl

    tmp = tmp_path_factory.mktemp("links")
    cases = [
        {"id": "hostile-equals", "input": "hi", "expected": "a calm answer"},
        {"id": "hostile-contains", "input": "hi", "assert": {"type": "contains", "value": "zz"}},
        {"id": "passes", "input": "hi", "assert": {"type": "contains", "value": "ALERT"}},
    ]
    (tmp / "links.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    reply = "\n".join(HOSTILE_PARTS)

    def agent(messages: list[dict[str, Any]]) -> str:
        return reply

    run = cl.run(cl.load(tmp / "links.jsonl"), agent, progress=False)
    run.save(tmp / "run.json")
    out = {"saved": run.save(tmp / "x.html"), "rerendered": tmp / "y.html"}
    _report(tmp / "run.json", out["rerendered"])
    return out


@pytest.mark.parametrize("which", ["saved", "rerendered"])
def test_clicking_every_link_runs_no_agent_text(browser, hostile_links, which):
    """Every link on the page is clicked (as a script would, hidden ones too): none runs
    agent text, none leaves the machine, and the hostile text still shows as text."""
    opened = Opened(browser, hostile_links[which])
    page, url = opened.page, hostile_links[which].as_uri()
    opened.settle()
    text = page.locator("body").inner_text()
    for part in HOSTILE_PARTS[:4]:
        assert part in text, f"{part!r} is not shown as text"
    assert "ALERT" in text and "title" in text
    links = page.locator("a").count()
    clicked = []
    for i in range(links):
        href = page.evaluate(
            "i => { const a = document.querySelectorAll('a')[i];"
            " if (!a) return null; const h = a.getAttribute('href'); a.click(); return h; }",
            i,
        )
        clicked.append(href)
        page.wait_for_timeout(50)
        assert page.evaluate("typeof window.__pwned") == "undefined", f"link {href!r} ran"
        if page.url != url:  # an in-page anchor (#...) or another file: back to the report
            page.goto(url, wait_until="load")
    assert links == 0 or clicked, "no link was clicked"
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("main img[src='x'], main img[onerror], a[href^='javascript:']").count() == 0
    assert opened.left == [], f"requests left the page: {opened.left}"
    assert opened.errors == [], f"script errors: {opened.errors}"
    opened.close()


class _Held:
    """demo:expense, except that dynamic cases wait at their second turn until released:
    the tree is caught mid-run with running, failed and passed instances."""

    def __new__(cls, release: Any) -> Any:
        from convlab.agents.protocol import Agent, AgentSession, as_agent

        inner = as_agent("demo:expense")

        class Session(AgentSession):
            def __init__(self, session: AgentSession) -> None:
                self.session = session

            async def send(self, messages: Any, ctx: Any) -> Any:
                import asyncio

                while ctx.turn >= 1 and ctx.case.mode == "dynamic" and not release.is_set():  # noqa: ASYNC110 - a thread sets it
                    await asyncio.sleep(0.02)
                return await self.session.send(messages, ctx)

            async def close(self) -> None:
                await self.session.close()

        class Held(Agent):
            name = "demo:expense"

            async def open(self, ctx: Any) -> AgentSession:
                return Session(await inner.open(ctx))

        return Held()


def test_live_tree_mid_run_renders(browser, tmp_path):
    """The live tree's snapshot caught mid-run (what README's screenshot shows)."""
    import threading
    import time

    import convlab as cl
    from convlab.notebook.progress import LiveTree

    release = threading.Event()
    tree = LiveTree()
    handle = cl.start("examples/expense", _Held(release), runs=2, parallel=6, progress=tree)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (len(tree.running) < 3 or tree.failed_total < 2):
        time.sleep(0.05)
    snapshot = tree.snapshot_html()
    release.set()
    run = handle.wait(30)
    assert run.status == "completed"
    assert "running (" in snapshot and "did not pass (" in snapshot
    page_file = tmp_path / "tree.html"
    page_file.write_text(
        "<!doctype html><meta charset=utf-8><body style='margin:16px;width:900px'>"
        f"{snapshot}</body>",
        "utf-8",
    )
    opened = Opened(browser, page_file)
    page = opened.page
    page.set_viewport_size({"width": 940, "height": 600})
    assert page.locator("details").count() >= 3
    assert "reached at turn" in page.locator("body").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "tree.png"), full_page=True)
    assert opened.left == [] and opened.errors == []
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_notebook_report_follows_the_color_scheme(browser, reports, scheme):
    """The exported quickstart in the reader's scheme: JupyterLab Light's or Dark's colours,
    and every output's text (cards, tree, tables, transcripts, charts) at 4.5:1 or more."""
    opened = Opened(browser, reports["quickstart"], color_scheme=scheme)
    opened.settle()
    page = opened.page
    result = contrast(page, ".jp-OutputArea-output")
    light = page.evaluate("document.body.getAttribute('data-jp-theme-light')")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"theme-notebook-report-{scheme}.png"), full_page=True)
    print(f"notebook report ({scheme}): {result['count']} text nodes, min {result['min']:.2f}:1")
    opened.close()
    assert opened.errors == [], opened.errors
    assert light == ("false" if scheme == "dark" else "true")
    assert background == ("rgb(17, 17, 17)" if scheme == "dark" else "rgb(255, 255, 255)")
    assert result["count"] > 300, result
    assert not result["worst"], describe(result)
