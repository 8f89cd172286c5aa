"""The divergence views in headless chromium: `run.divergence(case)`'s notebook output (the
branches, the why, the side-by-side) and `run.plot.divergence(case)`, drawn as JupyterLab
light and dark, VS Code Dark+ and plain light and dark pages make them. An agent's reply holding
`<script>`, an `<img onerror>` and a tool named `<b>` must show as text (no dialog, no script
error), and every text node must keep 4.5:1 contrast. Screenshots go to
tests/artifacts/divergence-*.png for a person to look at. Never skips (offline_browser.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flaky_agents import expense_agent, expense_case
from offline_browser import Opened
from theme_pages import HOSTS, contrast, describe, page

import convlab as cl
from convlab.model import Suite

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
HOSTILE = "<script>alert('reply')</script><img src=x onerror=alert('img')> Filed."


def hostile_agent(messages: list[dict[str, Any]], ctx: Any) -> Any:
    """The flaky expense agent, but its last reply carries markup and a tool named `<b>`."""
    reply = expense_agent(messages, ctx)
    if ctx.turn == 2:
        return cl.Reply(text=HOSTILE, tool_calls=[cl.ToolCall("<b>create_expense</b>", {})])
    return reply


@pytest.fixture(scope="module")
def run() -> cl.Run:
    case = expense_case()
    return cl.run(Suite(id="s", cases=[case]), hostile_agent, runs=12, progress=False,
                  history=False)  # fmt: skip


def _sections(run: cl.Run, chart_theme: str) -> list[tuple[str, str]]:
    old = cl.options.theme
    cl.options.theme = chart_theme  # type: ignore[assignment]
    try:
        chart = run.plot.divergence("expense-policy")._repr_mimebundle_()["text/html"]
    finally:
        cl.options.theme = old
    view = run.divergence("expense-policy")._repr_mimebundle_()["text/html"]
    return [("run.divergence(case)", view), ("run.plot.divergence(case)", str(chart))]


@pytest.mark.parametrize("host", list(HOSTS))
def test_the_divergence_views_are_escaped_and_readable(
    browser: Any, run: cl.Run, tmp_path: Path, host: str
) -> None:
    from convlab.report.notebook import plotly_script

    path = tmp_path / f"{host}.html"
    path.write_text(page(HOSTS[host], _sections(run, HOSTS[host].chart_theme), plotly_script()))
    opened = Opened(browser, path, color_scheme=HOSTS[host].color_scheme)
    opened.settle()
    shown = opened.page.inner_text("table.cl-sxs")
    result = contrast(opened.page, "body")
    ARTIFACTS.mkdir(exist_ok=True)
    opened.page.screenshot(path=str(ARTIFACTS / f"divergence-{host}.png"), full_page=True)
    sankeys = opened.page.locator(".sankey").count()
    opened.close()
    assert opened.dialogs == [] and opened.errors == [] and opened.left == []
    assert "<script>alert('reply')</script>" in shown  # the reply, shown as text
    assert "<b>create_expense</b>" in shown
    assert "fork" in shown and sankeys == 1
    assert result["count"] > 60, result
    assert not result["worst"], describe(result)
