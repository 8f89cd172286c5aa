"""The README's main-job command, run as a user types it, and its report.html in a browser.

`convlab run -i examples/expense -n demo:expense -o report.html` runs in a subprocess in a
temporary folder; it exits 1 (two expense cases fail on purpose). The report opens in
headless Debian chromium driven by playwright with every non-`file://` request aborted (none
may be made); the summary card must show 12 instances, 10 passed, 2 failed. The screenshot
is kept as tests/artifacts/cli_report.png; docs/img/cli_report.png (the README's picture)
is a copy of it.

This test never skips: without chromium or the playwright package it fails and says what to
install (`.ci/run` installs chromium; playwright is in the `test` extra).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
COMMAND = ["run", "-i", str(ROOT / "examples" / "expense"), "-n", "demo:expense"]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_readme_command_writes_a_report_that_renders_offline(tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (CI: .ci/run runs apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[test]'")

    proc = subprocess.run(
        [sys.executable, "-m", "convlab.cli", *COMMAND, "-o", "report.html"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr  # two cases fail on purpose
    assert "results written to report.html" in proc.stderr
    report = tmp_path / "report.html"
    assert report.is_file()

    left: list[str] = []
    errors: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            left.append(r.request.url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", route)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(report.as_uri(), wait_until="load")
            if page.locator("table").count():
                page.wait_for_selector("table tbody tr", timeout=30_000)
            if page.locator(".plotly-graph-div").count():
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
            page.wait_for_timeout(500)
            card = page.locator(".cl-card", has_text=re.compile(r"\d+\s+instances")).first
            text = card.inner_text()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "cli_report.png"), full_page=False)
        finally:
            browser.close()
    assert left == [], f"the report tried to reach the network: {left}"
    assert errors == [], errors
    counts = {k: int(n) for n, k in re.findall(r"(\d+)\s+(instances|passed|failed)", text)}
    assert counts == {"instances": 12, "passed": 10, "failed": 2}, text
