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
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from offline_browser import Opened

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
COMMAND = ["run", "-i", str(ROOT / "examples" / "expense"), "-n", "demo:expense"]


def test_readme_command_writes_a_report_that_renders_offline(browser: Any, tmp_path: Path) -> None:
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

    opened = Opened(browser, report)
    opened.settle(tables=False)
    page = opened.page
    card = page.locator(".cl-card", has_text=re.compile(r"\d+\s+instances")).first
    text = card.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "cli_report.png"), full_page=False)
    opened.close()
    assert opened.left == [], f"the report tried to reach the network: {opened.left}"
    assert opened.errors == [], opened.errors
    counts = {k: int(n) for n, k in re.findall(r"(\d+)\s+(instances|passed|failed)", text)}
    assert counts == {"instances": 12, "passed": 10, "failed": 2}, text
