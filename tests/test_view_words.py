"""What people read in the views agrees with itself: a case that fails every run is `always
fails` (never unstable), runs and turns count from 1 (the frames keep their 0-based indexes),
and `run.stability()` shows as an interactive table while staying a DataFrame."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import convlab as cl
from convlab.notebook.tables import stability_columns

EXPENSE = Path(__file__).resolve().parent.parent / "examples" / "expense"
CONTRACT = {"case_id", "runs", "passed", "failed", "errors", "pass_rate", "classification"}
CONTRACT |= {"pass_hat_k", "ci_low", "ci_high", "duration_mean_ms", "duration_std_ms"}


@pytest.fixture(scope="module")
def run() -> cl.Run:
    """The expense suite three times: two cases fail every run, on purpose."""
    return cl.run(cl.load(EXPENSE), "demo:expense", runs=3, progress=False)


def _table_rows(page: str) -> tuple[list[str], list[list[Any]]]:
    """The header and the rows DataTables gets from a table's HTML."""
    data = re.search(r'"data_json": ("(?:[^"\\]|\\.)*")', page)
    head = re.search(r'"table_html": ("(?:[^"\\]|\\.)*")', page)
    assert data and head
    cells = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", json.loads(head.group(1)), re.DOTALL)
    rows = json.loads(json.loads(data.group(1)))
    return [html.unescape(c.strip()) for c in cells], rows


# ---------------------------------------------------------------- stability and verdict


def test_a_case_failing_every_run_is_always_fails_and_keeps_yaos_class(run: cl.Run) -> None:
    st = run.stability().set_index("case_id")
    row = st.loc["expense-policy-limit"]
    assert (row["passed"], row["runs"], row["verdict"]) == (0, 3, "always fails")
    assert row["stability"] == "always fails"
    assert row["classification"] == "highly_unstable"  # Yao's class, as his format has it
    assert st.loc["expense-greeting", "stability"] == "stable"
    assert run.summary["stability"] == {
        "stable": 10,
        "mostly stable": 0,
        "unstable": 0,
        "highly unstable": 0,
        "always fails": 2,
        "one run": 0,
    }


def test_no_view_calls_an_always_failing_case_unstable(run: cl.Run, tmp_path: Path) -> None:
    views = {
        "card": str(run._repr_mimebundle_()),
        "card text": str(run),
        "cases table": run.table("cases")._repr_html_(),
        "stability table": run.table("stability")._repr_html_(),
        "run.stability()": str(run.stability()._repr_mimebundle_()["text/html"]),
        "pass rates chart": run.plot.pass_rates().to_json(),
        "stability chart": run.plot.stability().to_json(),
        "markdown": run.save(tmp_path / "r.md").read_text(encoding="utf-8"),
        "html report": run.save(tmp_path / "r.html").read_text(encoding="utf-8"),
    }
    for name, text in views.items():
        assert "unstable" not in text.replace("unstable (flaky", ""), name  # legend entries
        assert "always fails" in text, name


def test_a_flaky_case_gets_its_class_and_the_legend_says_flaky() -> None:
    def agent(messages: list[dict[str, Any]], ctx: Any) -> str:
        return "ok" if ctx.instance in ("c", "c #3") else "no"  # runs 1 and 4 of 5 pass

    suite = cl.Suite(
        id="f",
        cases=[
            cl.Case(
                id="c",
                input=[cl.Message(content="hi")],
                assertions=[{"kind": "equals", "value": "ok"}],
            )
        ],
    )
    flaky = cl.run(suite, agent, runs=5, progress=False)
    row = flaky.stability().iloc[0]
    assert (row["passed"], row["stability"], row["verdict"]) == (2, "highly unstable", "flaky")
    names = [t.name for t in flaky.plot.pass_rates().data if t.type == "bar"]
    assert names == ["highly unstable (flaky, <50%)"]


# ---------------------------------------------------------------- run.stability() in a notebook


def test_run_stability_is_a_dataframe_that_renders_as_an_interactive_table(run: cl.Run) -> None:
    from IPython.core.formatters import DisplayFormatter

    st = run.stability()
    assert isinstance(st, pd.DataFrame) and set(st.columns) >= CONTRACT
    data, _ = DisplayFormatter().format(st)
    page = data["text/html"]
    assert "new ITable(" in page and "<style" in page  # an interactive table, not pandas' HTML
    header, rows = _table_rows(page)
    assert header == stability_columns(st) and len(rows) == len(st) == 12
    assert "classification" not in header and "stability" in header
    assert data["text/plain"] == repr(st)  # printed, it is pandas' own text
    assert f"{len(header)} of {st.shape[1]} columns" in page
    # what is derived from it is a plain DataFrame, shown as pandas shows one
    assert type(st[["case_id", "runs"]]) is pd.DataFrame
    assert type(st.set_index("case_id")) is pd.DataFrame
    pd.testing.assert_frame_equal(run.table("stability").df, st)


# ---------------------------------------------------------------- counting from 1


def test_frames_count_from_0_and_tables_from_1(run: cl.Run) -> None:
    assert sorted(run.df["run"].unique()) == [0, 1, 2]  # the contract: 0-based run index
    assert sorted(run.turns_df["turn"].unique())[0] == 0
    table = run.table("turns")
    header, rows = _table_rows(table._repr_html_())
    shown = {c: [r[header.index(c)] for r in rows] for c in ("run", "turn", "repetition")}
    assert sorted(set(shown["run"])) == [1, 2, 3]
    assert min(shown["turn"]) == 1 and set(shown["repetition"]) == {1}
    assert "run, turn" in str(table.description) and "from 0 in the DataFrame" in str(
        table.description
    )
    assert list(table.df["run"]) == list(run.turns_df["run"])  # .df untouched
    header, rows = _table_rows(run.table("tool_calls")._repr_html_())
    assert min(r[header.index("index")] for r in rows) == 1


def test_reports_and_chart_hovers_count_from_1(run: cl.Run, tmp_path: Path) -> None:
    md = run.save(tmp_path / "r.md").read_text(encoding="utf-8")
    failures = [line for line in md.splitlines() if line.startswith("| `expense-policy-limit`")]
    runs_shown = sorted(line.split("|")[3].strip() for line in failures if line.count("|") > 7)
    assert runs_shown == ["1", "2", "3"]
    page = run.save(tmp_path / "r.html").read_text(encoding="utf-8")
    assert " run 3 · " in page and " run 0 · " not in page
    xml = run.save(tmp_path / "r.xml").read_text(encoding="utf-8")
    assert "(run 1)" in xml and "(run 3)" in xml and "(run 0)" not in xml
    points = [t for t in run.plot.durations().data if t.type == "scatter"]
    shown = {int(c[4]) for t in points for c in t.customdata}
    assert shown == {1, 2, 3}
