"""Every HTML view, readable in light and dark hosts, checked in headless chromium.

Each view (the live tree mid-run, the final card, the suite and run views with their tables,
the turns and stability tables, a comparison, `ask`'s transcript with tool blocks, the
report's failed instances, an experiment with its prompt diff and matrix, and the charts) is
drawn in pages as JupyterLab Light, JupyterLab
Dark and VS Code Dark+ make them (their theme variables, body attributes and classes), and
in plain pages whose `prefers-color-scheme` is dark or light. Every visible text node must
keep a contrast of 4.5:1 or more against its real background (tests/theme_pages.py says
how it is measured). The standalone reports (`run.save("x.html")`, `exp.save("x.html")`) are
checked in both schemes too. Screenshots go to tests/artifacts/theme-*.png for a person to look at.

This test never skips: without chromium or the playwright package it fails and says what to
install.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from offline_browser import Opened
from theme_pages import HOSTS, contrast, describe, page

import convlab as cl
from convlab.engine.events import CaseFinished, CaseStarted, RunStarted, TurnCompleted

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EXPENSE = ROOT / "examples" / "expense"


def _shy_agent(messages: list[dict[str, Any]]) -> Any:
    """An agent that calls a tool and then declines: most expense checks fail."""
    return cl.Reply(
        text="I cannot file that <yet>.",
        tool_calls=[cl.ToolCall("lookup_policy", {"topic": "travel"}, {"limit": 5000})],
    )


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    return make_runs()


def make_runs() -> dict[str, Any]:
    """The expense suite, run by the demo agent and by one that fails most checks."""
    from convlab.agents.serve import DemoServer

    suite = cl.load(EXPENSE)
    before = cl.run(suite, "demo:expense", runs=2, progress=False)
    after = cl.run(suite, _shy_agent, runs=2, progress=False)
    with DemoServer() as url:  # two system prompts: the experiment shows their word diff
        grid = cl.agents.openai_grid(
            {"expense": "demo:expense"},
            {"short": "Answer briefly.", "long": "Answer briefly, and <b>always</b> confirm."},
            base_url=url,
            api_key="k",
        )
        exp = cl.run(suite, grid, parallel=4, experiment="prompts", progress=False)
    return {"suite": suite, "before": before, "after": after, "experiment": exp}


def _tree_mid_run(run: Any) -> tuple[str, str]:
    """The live tree's snapshot mid-run (running instances with turns, failures, recent ones)
    and the static card that replaces it at the end."""
    from convlab.notebook.progress import LiveTree

    tree = LiveTree()
    results = list(run.results)
    tree(RunStarted("r1", len(results) + 3, "demo:expense", {"runs": 2}))
    for r in results:
        tree(CaseStarted(r.key, r.case_id, "standard"))
        tree(CaseFinished(r, r.case_id))
    for r in results[:3]:  # three still running, with the turns they have so far
        key = (r.case_id + "-again", "", 0, 1)
        tree(CaseStarted(key, r.case_id, "standard"))
        for t in r.turns:
            tree(TurnCompleted(key, t))
    tree.bind_stop(None, "interrupt the kernel (■) to stop")
    tree._draw()
    snapshot = tree.snapshot_html()
    final = tree.final_bundle(run)["text/html"]
    tree._quit.set()
    return snapshot, final


def _ask_views() -> list[str]:
    def agent(messages: list[dict[str, Any]], ctx: Any) -> Any:
        ctx.world["filed"] = 1
        return cl.Reply(
            text="Filed it.",
            tool_calls=[
                cl.ToolCall("create_expense", {"amount": 40, "category": "taxi"}, {"id": "e-1"}),
                cl.ToolCall(name="notify", arguments={"to": "boss"}, error="mailbox full"),
            ],
        )

    passed = cl.ask(
        "demo:expense",
        "Submit a $40 taxi expense",
        {"type": "contains", "value": "confirm"},
        {"type": "tool_called", "value": "create_expense"},
    )
    failed = cl.ask(
        agent,
        "And a $12000 flight?",
        {"type": "contains", "value": "approval"},
        history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}],
    )
    return [passed._repr_mimebundle_()["text/html"], failed._repr_mimebundle_()["text/html"]]


def _sections(runs: dict[str, Any], chart_theme: str) -> list[tuple[str, str]]:
    from convlab.notebook.display import comparison_bundle, run_bundle, suite_bundle
    from convlab.report.html import failures_html

    before, after = runs["before"], runs["after"]
    snapshot, final = _tree_mid_run(after)
    comparison = cl.compare(before, after)
    old = cl.options.theme
    cl.options.theme = chart_theme  # type: ignore[assignment]
    try:
        charts = [after.plot.pass_rates(), after.plot.checkpoints(), comparison.plot()]
        chart_html = [str(f._repr_mimebundle_()["text/html"]) for f in charts]
    finally:
        cl.options.theme = old
    return [
        ("live tree, mid-run (snapshot)", snapshot),
        ("final card", final),
        ("suite", suite_bundle(runs["suite"])["text/html"]),
        ("run", run_bundle(after)["text/html"]),
        ('run.table("turns")', after.table("turns").to_html()),
        ("run.stability()", after.table("stability").to_html()),
        ("compare", comparison_bundle(comparison)["text/html"]),
        *(("ask", view) for view in _ask_views()),
        ("report: instances that did not pass", failures_html(after, limit=2)),
        ("experiment", runs["experiment"]._repr_mimebundle_()["text/html"]),
        ("experiment matrix", runs["experiment"].matrix().to_html()),
        *(("chart", view) for view in chart_html),
    ]


@pytest.fixture(scope="module")
def pages(runs: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_pages(runs, tmp_path_factory.mktemp("themes"))


def write_pages(runs: dict[str, Any], folder: Path) -> dict[str, Path]:
    """One page per host, holding every view; host name -> path."""
    from convlab.report.notebook import plotly_script

    out = {}
    for name, host in HOSTS.items():
        path = folder / f"{name}.html"
        path.write_text(page(host, _sections(runs, host.chart_theme), plotly_script()))
        out[name] = path
    return out


def _open(browser: Any, path: Path, scheme: str) -> Opened:
    opened = Opened(browser, path, color_scheme=scheme)
    opened.settle()
    return opened


@pytest.mark.parametrize("host", list(HOSTS))
def test_every_view_keeps_its_contrast(browser: Any, pages: dict[str, Path], host: str) -> None:
    opened = _open(browser, pages[host], HOSTS[host].color_scheme)
    result = contrast(opened.page, "body")
    ARTIFACTS.mkdir(exist_ok=True)
    opened.page.screenshot(path=str(ARTIFACTS / f"theme-{host}.png"), full_page=True)
    print(f"{host}: {result['count']} text nodes, min contrast {result['min']:.2f}:1")
    opened.close()
    assert opened.errors == [], opened.errors
    assert opened.left == [], opened.left
    assert result["count"] > 500, result  # the views are there, with their tables and charts
    assert not result["worst"], describe(result)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("what", ["after", "experiment"])
def test_the_standalone_report_follows_the_color_scheme(
    browser: Any, runs: dict[str, Any], tmp_path: Path, scheme: str, what: str
) -> None:
    path = runs[what].save(tmp_path / "report.html")
    opened = _open(browser, path, scheme)
    page_ = opened.page
    result = contrast(page_, "body")
    background = page_.evaluate("getComputedStyle(document.body).backgroundColor")
    page_.screenshot(path=str(ARTIFACTS / f"theme-report-{what}-{scheme}.png"), full_page=True)
    print(f"{what} report ({scheme}): {result['count']} text nodes, min {result['min']:.2f}:1")
    opened.close()
    assert opened.errors == [], opened.errors
    assert background == ("rgb(13, 17, 23)" if scheme == "dark" else "rgb(255, 255, 255)")
    assert result["count"] > 200, result
    assert not result["worst"], describe(result)
