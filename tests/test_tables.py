"""Interactive tables (convlab.notebook.tables): what a user sees in the DataTable.

The HTML is read back the way the browser gets it: the `data_json` rows and the header that
itables embeds in the output. One end-to-end check opens a page in headless Chromium with the
network blocked (a missing browser fails it: `.ci/run` installs Debian's chromium).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offline_browser import Opened

import convlab as cl
from convlab.htmlkit import CHANGE_COLORS, GLYPHS, STABILITY_CSS, STATUS_CSS
from convlab.notebook.tables import (
    KINDS,
    Table,
    frame_html,
    run_table,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
XSS = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
STORY = "Once upon a time " + "blah " * 60 + "the hidden-needle word comes late.\nLine two " + XSS


def _string(name: str, page: str) -> str:
    match = re.search(rf'"{name}": ("(?:[^"\\]|\\.)*")', page)
    assert match, f"no {name} in the table HTML"
    return str(json.loads(match.group(1)))


def _rows(page: str) -> list[list[Any]]:
    """The rows DataTables receives (floats come as [display, sort] pairs)."""
    return list(json.loads(_string("data_json", page)))


def _header(page: str) -> list[str]:
    head = _string("table_html", page)
    cells = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", head, re.DOTALL)
    return [html.unescape(c.strip()) for c in cells]


def _records(page: str) -> list[dict[str, Any]]:
    names = _header(page)
    return [dict(zip(names, row, strict=True)) for row in _rows(page)]


def _agent(messages: list[dict[str, Any]]) -> str:
    text = str(messages[-1]["content"])
    if "story" in text:
        return STORY
    if "say" in text:
        return f"You said: {text} {IMG}"
    return "Hello! " + text


@pytest.fixture(scope="module")
def xss_run(tmp_path_factory: pytest.TempPathFactory) -> cl.Run:
    """A run with a hostile case id, input and reply, a long reply and failures."""
    cases = [
        {"id": "greet", "input": "Hello", "assert": [{"type": "contains", "value": "Hello"}]},
        {
            "id": "xss-" + IMG,
            "input": "say " + XSS,
            "assert": [{"type": "contains", "value": "never-there", "message": "bad " + XSS}],
        },
        {"id": "long", "input": "tell a story", "assert": [{"type": "contains", "value": "zebra"}]},
    ]
    path = tmp_path_factory.mktemp("tables") / "suite.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases), encoding="utf-8")
    return cl.run(cl.load(path), _agent, progress=False, runs=2)


@pytest.fixture(scope="module")
def expense_run() -> cl.Run:
    return cl.run(cl.load(EXAMPLES / "expense"), "demo:expense", progress=False)


# ---------------------------------------------------------------- kinds and the bundle


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_is_an_offline_datatable_of_its_frame(expense_run: cl.Run, kind: str) -> None:
    table = expense_run.table(kind)
    assert isinstance(table, Table)
    bundle = table._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    page = bundle["text/html"]
    assert "new ITable(" in page and "data-convlab-bundle" in page
    assert "unpkg.com" not in page and "<script src=" not in page  # nothing from the network
    assert len(_rows(page)) == len(table) == len(table.df) > 0
    assert _header(page) == [str(c) for c in table.shown.columns]
    assert kind in bundle["text/plain"] and f"{len(table):,} rows" in bundle["text/plain"]


def test_table_df_is_the_runs_own_frame(expense_run: cl.Run) -> None:
    pd.testing.assert_frame_equal(expense_run.table().df, expense_run.df)
    pd.testing.assert_frame_equal(expense_run.table("turns").df, expense_run.turns_df)
    pd.testing.assert_frame_equal(expense_run.table("stability").df, expense_run.stability())


def test_unknown_kind_names_the_valid_ones_and_a_close_match(expense_run: cl.Run) -> None:
    with pytest.raises(ValueError, match="valid kinds: instances, cases") as err:
        run_table(expense_run, "instance")
    assert "Did you mean 'instances'?" in str(err.value)
    with pytest.raises(ValueError, match="tool_calls"):
        expense_run.table("zzz")


def test_cases_kind_has_one_row_per_case_with_the_first_failure(xss_run: cl.Run) -> None:
    df = xss_run.table("cases").df
    assert list(df.columns[:7]) == [
        "case_id",
        "runs",
        "passed",
        "failed",
        "errors",
        "pass_rate",
        "stability",
    ]
    assert df.columns[-1] == "first_failure"
    assert list(df["case_id"]) == ["greet", "xss-" + IMG, "long"]
    row = df.set_index("case_id").loc["long"]
    assert (row["runs"], row["passed"], row["failed"], row["pass_rate"]) == (2, 0, 2, 0.0)
    assert "zebra" in row["first_failure"]
    assert df.set_index("case_id").loc["greet", "first_failure"] == ""


# ---------------------------------------------------------------- safety


def test_untrusted_text_never_reaches_the_html_unescaped(xss_run: cl.Run) -> None:
    for kind in KINDS:
        page = xss_run.table(kind).to_html()
        for payload in (XSS, IMG, "<script>alert", "<img src=x", "onerror=alert(1)>"):
            assert payload not in page, (kind, payload)
    cells = json.dumps(_rows(xss_run.table("turns").to_html()))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in cells
    assert "&lt;img src=x onerror=alert(1)&gt;" in cells


def test_headers_caption_and_arbitrary_frames_are_escaped() -> None:
    df = pd.DataFrame({XSS: [IMG], "n": [1], "obj": [{"k": XSS}], IMG: [[XSS, 1]]})
    page = frame_html(df, caption="cap " + XSS)
    assert XSS not in page and IMG not in page
    assert _header(page)[0] == XSS  # shown as text, not run
    assert "cap &lt;script&gt;" in page


_TAG = re.compile(r"<[^>]*>")
_OURS = re.compile(
    r"^(<details class='cl-more'>|<summary title='[\d,]+ characters, click for all'>|"
    r"</summary>|<div>|</div>|</details>|<span class='cl-badge' "
    r"style='color:var\(--cl-[a-z]+,#[0-9a-f]{6}\);"
    r"background:color-mix\(in srgb,currentColor 12%,transparent\)'>|</span>)$"
)


@settings(max_examples=40, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("<>&\"' /=ascript\n\tx")), max_size=300)
    | st.text(max_size=300)
    | st.sampled_from(["failed", "passed", "error"])
)
def test_any_text_only_carries_our_own_markup(text: str) -> None:
    page = frame_html(pd.DataFrame({"reply": [text], "status": [text]}), bundle=False)
    for cell in _rows(page)[0]:
        assert all(_OURS.match(tag) for tag in _TAG.findall(cell)), cell
        assert "\n" not in cell and "\t" not in cell


# ---------------------------------------------------------------- what the cells show


def test_status_and_class_cells_are_coloured(xss_run: cl.Run) -> None:
    rows = _records(xss_run.table().to_html())
    failed = next(r for r in rows if r["case_id"] == "long")
    assert f"color:{STATUS_CSS['failed']}" in failed["status"]
    assert f"{GLYPHS['failed']} failed" in failed["status"]
    passed = next(r for r in rows if r["case_id"] == "greet")
    assert f"color:{STATUS_CSS['passed']}" in passed["status"]
    cases = _records(xss_run.table("cases").to_html())
    assert f"color:{STABILITY_CSS['always fails']}" in cases[2]["stability"]
    assert "always fails" in cases[2]["stability"] and "unstable" not in str(cases[2])
    assert f"color:{STABILITY_CSS['stable']}" in cases[0]["stability"]
    checks = _records(xss_run.table("assertions").to_html())
    assert any(f"color:{STATUS_CSS['failed']}" in r["passed"] for r in checks)


def test_long_text_is_shortened_with_the_full_text_one_click_away(xss_run: cl.Run) -> None:
    rows = _records(xss_run.table("turns").to_html())
    cell = next(r["response"] for r in rows if "story" in r["input"])
    found = re.search(r"<summary[^>]*>(.*?)</summary><div>(.*?)</div>", cell)
    assert found, cell
    summary = html.unescape(found.group(1))
    assert len(summary) == 120 and summary.endswith("…")
    assert summary.startswith("Once upon a time blah")
    full = found.group(2)
    assert html.unescape(full.replace("&#10;", "\n")) == STORY  # all of it, newlines kept
    short = next(r["input"] for r in rows if "story" in r["input"])
    assert short == "tell a story"  # short texts stay plain


def test_numbers_stay_numbers_for_sorting() -> None:
    df = pd.DataFrame(
        {
            "n": [3, 1],
            "maybe": pd.array([1, None], dtype="Int64"),
            "rate": [12.34567, float("nan")],
            "flag": [True, False],
        }
    )
    rows = _rows(frame_html(df))
    assert [r[0] for r in rows] == [3, 1]
    assert rows[0][1] == ["1.0", 1.0] and rows[1][1][0] == "NaN"  # never a raw "<NA>"
    assert rows[0][2] == ["12.346", 12.346]
    assert [r[3] for r in rows] == ["yes", "no"]


def test_no_silent_downsampling_of_wide_or_big_frames() -> None:
    wide = pd.DataFrame({f"c{i}": range(3) for i in range(40)})  # pandas shows 20 columns
    assert len(_header(frame_html(wide))) == 40
    big = pd.DataFrame({"case_id": [f"case-{i:05d}" for i in range(20_000)], "n": range(20_000)})
    full = frame_html(big)
    assert len(_rows(full)) == 20_000 and "Showing the first" not in full
    capped = frame_html(big, max_bytes=50_000)
    kept = len(_rows(capped))
    assert 1_000 < kept < 20_000
    assert f"Showing the first {kept:,} of 20,000 rows" in capped
    assert _rows(capped)[0][0] == "case-00000"


def test_small_tables_still_have_a_search_box() -> None:
    page = frame_html(pd.DataFrame({"a": [1]}))
    assert '"topEnd": "search"' in page
    assert '"paging"' not in page.split('"layout"')[1].split("}")[0]


# ---------------------------------------------------------------- suite, compare, reprs


def test_suite_table_lists_the_cases() -> None:
    suite = cl.load(EXAMPLES / "catalog")
    table = suite.table()
    rows = _records(table.to_html())
    assert [r["case_id"] for r in rows] == [c.id for c in suite.cases]
    assert {"name", "mode", "turns", "assertions", "source"} <= set(rows[0])


def test_compare_table_colours_the_change(expense_run: cl.Run) -> None:
    suite = cl.load(EXAMPLES / "expense")
    worse = cl.run(suite, lambda messages: "I cannot help.", progress=False)
    comparison = cl.compare(expense_run, worse)
    table = comparison.table()
    assert table.df is comparison
    rows = _records(table.to_html())
    changes = [r["change"] for r in rows]
    assert any(f"color:{CHANGE_COLORS['worse']}" in c and ">worse<" in c for c in changes)
    assert comparison.summary and table.description == comparison.summary
    assert '<div class="cl-desc">' in table.to_html()


def test_text_repr_and_len(xss_run: cl.Run) -> None:
    table = xss_run.table("cases")
    text = table._repr_mimebundle_()["text/plain"]
    assert text.splitlines()[0].startswith(f"Run {xss_run.id} · cases: 3 rows x ")
    assert "greet" in text and "<html" not in text
    assert repr(table).startswith("<Run ") and len(table) == 3
    assert table._repr_html_().startswith('<div class="convlab cl-table">')


def test_import_convlab_loads_no_view_library() -> None:
    code = (
        "import sys, convlab, convlab.notebook.tables\n"
        "bad = [m for m in ('itables', 'IPython', 'plotly', 'ipywidgets') if m in sys.modules]\n"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- in a browser, offline


@pytest.mark.slow
def test_renders_sorts_and_searches_offline_in_chromium(
    browser: Any, xss_run: cl.Run, tmp_path: Path
) -> None:
    body = xss_run.table().to_html() + xss_run.table("turns").to_html()
    page_file = tmp_path / "tables.html"
    page_file.write_text(f"<!doctype html><meta charset=utf-8><body>{body}</body>", "utf-8")
    opened = Opened(browser, page_file)
    page = opened.page
    page.wait_for_selector("table.dataTable", timeout=20_000)
    assert page.locator("table.dataTable").count() == 2
    info = page.locator(".dt-info")
    assert info.nth(0).inner_text() == "Showing 1 to 6 of 6 entries"
    search = page.locator(".dt-search input").nth(1)
    search.fill("hidden-needle")  # only in the full text behind <details>
    page.wait_for_timeout(300)
    assert "Showing 1 to 2 of 2 entries" in info.nth(1).inner_text()
    page.locator("table.dataTable").nth(0).locator("thead th").first.click()
    page.wait_for_timeout(200)
    first = page.locator("table.dataTable").nth(0).locator("tbody tr td").first
    assert first.inner_text() == "greet"
    page.locator("table.dataTable").nth(0).locator("thead th").first.click()
    page.wait_for_timeout(200)
    assert first.inner_text() == "xss-" + IMG  # sorted descending, shown as text
    failed = page.locator("table.dataTable").nth(0).locator(".cl-badge", has_text="failed")
    assert failed.count() > 0
    opened.close()
    assert opened.left == [] and opened.dialogs == []


@pytest.mark.parametrize(("runs", "kind"), [(2, "cases"), (1, "instances")])
def test_the_run_cards_table_lists_the_worst_cases_first(runs: int, kind: str) -> None:
    """As the pass-rate chart does: a failing case never waits on page 2 behind passing ones."""
    ids = [f"{n}-{'ok' if n % 3 else 'bad'}" for n in range(1, 31)]  # 10 of 30 fail
    suite = cl.Suite(
        id="order",
        cases=[
            cl.Case(
                id=cid,
                input=[cl.Message(content=cid)],
                assertions=[{"kind": "contains", "value": "ok"}],
            )
            for cid in ids
        ],
    )
    run = cl.run(suite, lambda m: "ok" if "ok" in m[-1]["content"] else "no", runs=runs,
                 progress=False)  # fmt: skip
    page = run._repr_mimebundle_()["text/html"]
    preview = page[page.index(f"· {kind}") :]
    preview = preview[preview.index("_fallback") :]  # the rows a reader sees first
    at = {cid: preview.find(f"<td>{cid}</td>") for cid in ids}
    shown = sorted((c for c in ids if at[c] >= 0), key=at.__getitem__)
    bad = [c for c in ids if c.endswith("bad")]
    assert shown[: len(bad)] == bad  # every failing case first, in suite order
    assert all(c.endswith("ok") for c in shown[len(bad) :])
    assert list(run.table(kind).df["case_id"]) == ids  # run.table() keeps the frame's order
