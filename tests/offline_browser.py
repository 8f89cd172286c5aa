"""Headless Debian chromium through the playwright package, with the network cut off.

Shared by every browser test: one launch recipe (no `playwright install`), and pages whose
requests other than `file:`, `data:` and `blob:` are aborted and recorded, with script errors
and dialogs (an `alert` that agent text managed to run) recorded too. A missing browser or
package fails the test with what to install; it never skips.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL = ("file:", "data:", "blob:")


@contextmanager
def launched() -> Iterator[Any]:
    """A running headless chromium (closed afterwards)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (CI: .ci/run runs apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[test]'")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Opened:
    """A page opened offline: the page, requests that tried to leave, script errors, dialogs.

    `color_scheme` is what the page's `prefers-color-scheme` answers ("light" or "dark")."""

    def __init__(
        self,
        browser: Any,
        path: Path,
        width: int = 1280,
        height: int = 900,
        color_scheme: str = "light",
    ) -> None:
        self.left: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.context = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme=color_scheme
        )
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("requestfailed", lambda r: self.failed.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)
        self.page.goto(path.as_uri(), wait_until="load")

    def _route(self, route: Any) -> None:
        if route.request.url.startswith(LOCAL):
            route.continue_()
        else:
            self.left.append(route.request.url)
            route.abort()

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def settle(self, tables: bool = True) -> None:
        """Wait for the tables (DataTables; required unless `tables` is off) and charts
        (Plotly) to draw."""
        if tables:
            self.page.wait_for_selector("table.dataTable tbody tr", timeout=30_000)
        if self.page.locator(".plotly-graph-div").count():
            self.page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        self.page.wait_for_timeout(500)

    def close(self) -> None:
        self.context.close()
