"""An experiment's reports in a real browser (Debian chromium driven by playwright), offline:
the standalone page (`exp.save("x.html")`) and `convlab report exp.json -o report.html`.

Four prompt variants of two demo "models" served by a real `serve-demo` on 127.0.0.1 (one
system prompt holds `<script>`). Checks: the leaderboard lists every variant, a click on a
variant's column of the matrix sorts its pass rates, the trade-off chart draws its points in
SVG, the hostile prompt shows as text and runs nothing, and no request leaves the page. A
full-page screenshot is kept in tests/artifacts/experiment.png for a person to look at.

Never skips: without chromium or the playwright package it fails and says what to install.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from offline_browser import Opened

import convlab as cl
from convlab.agents.serve import DemoServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXPENSE = ROOT / "examples" / "expense"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
HOSTILE = "Be brief. <script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("experiment")
    with DemoServer() as url:
        grid = cl.agents.openai_grid(
            {"expense": "demo:expense", "finance": "demo:finance"},
            {"short": "Answer briefly.", "hostile": HOSTILE},
            base_url=url,
            api_key="k",
        )
        exp = cl.run(EXPENSE, grid, runs=2, parallel=4, experiment="prompts", progress=False)
    saved = exp.save(tmp / "exp.json")
    out = {"standalone": exp.save(tmp / "standalone.html"), "report": tmp / "report.html"}
    proc = subprocess.run(
        [sys.executable, "-m", "convlab.cli", "report", str(saved), "-o", str(out["report"])],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def _column(table: Any, index: int) -> list[str]:
    return [
        c.strip() for c in table.locator(f"tbody tr td:nth-child({index + 1})").all_inner_texts()
    ]


@pytest.mark.parametrize("which", ["standalone", "report"])
def test_experiment_report_renders_offline(
    browser: Any, pages: dict[str, Path], which: str
) -> None:
    opened = Opened(browser, pages[which], width=1400)
    opened.settle()
    page = opened.page

    board = page.locator(".cl-table", has_text="Leaderboard").locator("table.dataTable").first
    names = _column(board, 0)
    assert len(names) == 4, names
    assert {n.removesuffix(" (baseline)") for n in names} == {
        "expense/short",
        "expense/hostile",
        "finance/short",
        "finance/hostile",
    }
    assert sum(n.endswith("(baseline)") for n in names) == 1

    matrix = (
        page.locator(".cl-table", has_text="Pass rate per case and variant")
        .locator("table.dataTable")
        .first
    )
    headers = [h.strip() for h in matrix.locator("thead th").all_inner_texts()]
    column = headers.index("expense/short")  # 100% but for the two cases failing on purpose
    header = matrix.locator("thead th").nth(column)
    seen = []
    for _ in range(2):  # ascending, then descending
        header.click()
        page.wait_for_timeout(200)
        seen.append([float(v) for v in _column(matrix, column)])
    assert seen[0] == sorted(seen[0]) and seen[0][0] == 0.0, seen
    assert seen[1] == sorted(seen[1], reverse=True) and seen[1][0] == 100.0, seen

    tradeoff = page.locator(".plotly-graph-div", has_text="Pass rate against").first
    assert tradeoff.locator("svg.main-svg").count() >= 1
    points = tradeoff.locator("g.scatterlayer g.trace path.point")
    assert points.count() >= 4, "the trade-off chart drew fewer points than variants"
    assert page.locator(".plotly-graph-div", has_text="per case and variant").count() >= 1

    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert "<script>window.__pwned=1</script>" in page.locator("body").inner_text()
    assert page.locator("main img[src='x'], img[onerror]").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"experiment-{which}.png"), full_page=True)
    assert opened.left == [], f"requests left the page: {opened.left}"
    assert opened.errors == [], f"script errors: {opened.errors}"
    assert not [u for u in opened.failed if not u.endswith("/x")], opened.failed
    page.close()
