"""The DataTables bundle travels once per notebook (convlab.htmlkit.bundle).

What a user notices: a saved notebook that is light whatever its number of tables, and whose
tables still show when it is reopened with no kernel, wherever the output that carries the
bundle sits, and say so when it has been cleared by hand. Reopening from disk is checked on
the pages that exporters make of the saved notebook (nbconvert's own, and `convlab report`'s),
opened in headless chromium with the network cut off.
"""

from __future__ import annotations

import base64
import gzip
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import pytest
from offline_browser import Opened

from convlab.htmlkit import bundle_html, dedupe_bundles, one_bundle, payload
from convlab.notebook.tables import frame_html

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
LOADER = "data-convlab-bundle"
SAFE = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%:()*+-;.=,?@^_`{|}~"
B85 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"


def _unpack(text: str, length: int) -> bytes:
    raw = base64.b85decode(text.encode("ascii").translate(bytes.maketrans(SAFE, B85)))
    return gzip.decompress(raw[:length])


# ---------------------------------------------------------------- the payload


def test_the_bundle_is_itables_build_without_what_convlab_tables_never_use() -> None:
    from itables.utils import find_package_file

    loader = bundle_html()
    blobs = dict(re.findall(r'inflate\("([^"]+)", (\d+)\)', loader))
    assert len(blobs) == 2
    css, js = (_unpack(text, int(n)).decode("utf-8") for text, n in blobs.items())
    whole_js = find_package_file("html", "dt_bundle.js").read_text("utf-8")
    whole_css = find_package_file("html", "dt_bundle.css").read_text("utf-8")
    assert "ITable" in js and "jQuery" in js  # what the tables need
    assert ".JSZip=" in whole_js and ".JSZip=" not in js  # the Excel export's zip library
    assert len(js) < len(whole_js) - 90_000
    assert "table.dataTable" in css and ".dtsp-" in whole_css and ".dtsp-" not in css
    assert len(loader) < 210_000  # a third of the whole bundle in base64
    for markup in ("<", ">", "&"):  # the packed text is inert in HTML
        assert all(markup not in text for text in blobs)


def test_convlab_tables_wait_for_their_own_bundle_not_itables() -> None:
    page = frame_html(pd.DataFrame({"a": [1, 2]}), bundle=False)
    ns = payload()["ns"]
    assert ns.startswith("_convlab_itables_")
    assert f"window.{ns}" in page and f"window.{payload()['itables_ns']}" not in page
    assert f'"{payload()["event"]}"' in page


def test_bundle_false_dedupe_and_one_bundle_ship_it_once() -> None:
    df = pd.DataFrame({"a": [1, 2]})
    assert LOADER not in frame_html(df, bundle=False)
    page = "<body>" + frame_html(df) + frame_html(df) + frame_html(df) + "</body>"
    assert page.count(LOADER) == 3
    once = dedupe_bundles(page)
    assert once.count(LOADER) == 1 and once.count("new ITable(") == 3
    assert len(page) - len(once) > 2 * 190_000
    # a page whose outputs lost the carrier gets one loader back, at its end
    bare = "<body>" + frame_html(df, bundle=False) + "</body>"
    fixed = one_bundle(bare)
    assert fixed.count(LOADER) == 1 and fixed.index(LOADER) > fixed.index("new ITable(")
    assert one_bundle("<body>no table</body>") == "<body>no table</body>"


# ---------------------------------------------------------------- which output carries it


@pytest.fixture
def kernel() -> Iterator[Any]:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _cell(kc: Any, code: str, cell_id: str | None) -> list[str]:
    """Run `code` as a front end does (JupyterLab sends the cell's id in the request's
    metadata; nbclient sends none) and return the text/html of each output it displayed."""
    metadata = {"cellId": cell_id} if cell_id else {}
    content = {"code": code, "silent": False, "store_history": True, "allow_stdin": False}
    msg = kc.session.msg("execute_request", content, metadata=metadata)
    kc.shell_channel.send(msg)
    outputs: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            reply = kc.get_iopub_msg(timeout=1)
        except Exception:  # queue.Empty: keep waiting
            continue
        if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        kind, body = reply["msg_type"], reply["content"]
        assert kind != "error", body
        if kind in ("display_data", "execute_result") and "text/html" in body["data"]:
            outputs.append(str(body["data"]["text/html"]))
        if kind == "status" and body["execution_state"] == "idle":
            return outputs
    raise AssertionError(f"no reply to {code!r}")


SETUP = """
import pandas as pd
from IPython.display import display
from convlab.notebook.tables import Table
t = Table(pd.DataFrame({"a": [1, 2]}), "t")
"""


@pytest.mark.slow
def test_in_a_kernel_the_first_table_carries_the_bundle_until_its_cell_runs_again(
    kernel: Any,
) -> None:
    carries = lambda outs: [LOADER in out for out in outs]  # noqa: E731
    assert _cell(kernel, SETUP, "setup") == []
    assert carries(_cell(kernel, "t", "A")) == [True]
    assert carries(_cell(kernel, "t", "B")) == [False]
    assert carries(_cell(kernel, "display(t); display(t)", "C")) == [False, False]
    # B again: A's output still carries it
    assert carries(_cell(kernel, "t", "B")) == [False]
    # A again replaces its output: the bundle goes with the new one
    assert carries(_cell(kernel, "t", "A")) == [True]
    # A run again, showing no table now: the next table shown anywhere takes the bundle over
    assert carries(_cell(kernel, "1", "A")) == []
    assert carries(_cell(kernel, "display(t); display(t)", "C")) == [True, False]
    # no cell id (nbclient): a cell is known by its source
    assert carries(_cell(kernel, "1", "C")) == []
    assert carries(_cell(kernel, "display(t); display(t)", None)) == [True, False]
    assert carries(_cell(kernel, "t  # D", None)) == [False]
    assert carries(_cell(kernel, "display(t); display(t)", None)) == [True, False]


# ---------------------------------------------------------------- reopened from disk


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart executed as `convlab report` executes it, saved as a notebook."""
    from convlab.report.notebook import execute_notebook

    nb = execute_notebook(QUICKSTART)
    path = tmp_path_factory.mktemp("saved") / "quickstart.ipynb"
    path.write_text(nbformat.writes(nb) + "\n", "utf-8")  # type: ignore[no-untyped-call]
    return path


def _tables_in(nb: Any) -> int:
    return sum(
        str(out.get("data", {}).get("text/html", "")).count("new ITable(")
        for cell in nb.cells
        for out in cell.get("outputs", [])
    )


@pytest.mark.slow
def test_the_saved_quickstart_holds_the_bundle_once_and_stays_light(saved: Path) -> None:
    nb = nbformat.read(saved, as_version=4)  # type: ignore[no-untyped-call]
    assert _tables_in(nb) == 3
    assert saved.read_text("utf-8").count(LOADER) == 1
    # three bundles made it 960 KB; one bundle (191 KB) and the outputs themselves (their
    # data, charts and each view's own stylesheet) now
    assert saved.stat().st_size < 400_000


def _nbconvert_page(nb: Any, path: Path) -> Path:
    """nbconvert's own HTML export (lab template), not convlab's."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)  # type: ignore[no-untyped-call]
    path.write_text(body, "utf-8")
    return path


def _drawn(browser: Any, page: Path) -> Opened:
    opened = Opened(browser, page)
    opened.page.wait_for_load_state("load")
    opened.page.wait_for_timeout(1500)  # a table without a bundle says so 0.5 s after load
    return opened


@pytest.mark.slow
@pytest.mark.parametrize("carrier", ["first", "last"])
def test_every_table_shows_in_the_reopened_notebook(
    browser: Any, saved: Path, tmp_path: Path, carrier: str
) -> None:
    nb = nbformat.read(saved, as_version=4)  # type: ignore[no-untyped-call]
    if carrier == "last":  # the carrier's cell moved below the tables that wait for it
        first = next(i for i, c in enumerate(nb.cells) if LOADER in str(c.get("outputs", "")))
        nb.cells.append(nb.cells.pop(first))
    opened = _drawn(browser, _nbconvert_page(nb, tmp_path / "nbconvert.html"))
    page = opened.page
    page.wait_for_selector("table.dataTable tbody tr", timeout=30_000)
    assert page.locator("table.dataTable").count() == _tables_in(nb) == 3
    assert page.locator(".dt-search input").count() == 3  # interactive, not the preview
    assert page.locator("[id$=_missing]:visible").count() == 0
    assert not [e for e in opened.errors if "Plotly" not in e]  # plotly.js: convlab's export
    opened.close()


@pytest.mark.slow
def test_a_cleared_carrier_is_said_and_convlabs_export_puts_the_bundle_back(
    browser: Any, saved: Path, tmp_path: Path
) -> None:
    from convlab.report.notebook import export_html

    nb = nbformat.read(saved, as_version=4)  # type: ignore[no-untyped-call]
    for cell in nb.cells:
        if LOADER in str(cell.get("outputs", "")):
            cell.outputs = []  # "Clear Cell Output" by hand, the cell not run again
    assert _tables_in(nb) == 2
    opened = _drawn(browser, _nbconvert_page(nb, tmp_path / "cleared.html"))
    notes = opened.page.locator("[id$=_missing]:visible")
    assert notes.count() == 2 and "did not load" in notes.first.inner_text()
    assert opened.page.locator("div[id$=_fallback]:visible table tbody tr").count() > 0
    opened.close()
    (tmp_path / "convlab.html").write_text(export_html(nb), "utf-8")
    opened = _drawn(browser, tmp_path / "convlab.html")
    opened.page.wait_for_selector("table.dataTable tbody tr", timeout=30_000)
    assert opened.page.locator("table.dataTable").count() == 2
    assert opened.page.locator("[id$=_missing]:visible").count() == 0
    assert opened.errors == [] and opened.left == []
    opened.close()
