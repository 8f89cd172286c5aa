"""Every notebook in notebooks/ executes under "Run All" on a real kernel (nbclient +
ipykernel), and what its prose says is what its outputs show."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = [
    "distributed.ipynb",
    "formats.ipynb",
    "prompt_iteration.ipynb",
    "quickstart.ipynb",
    "stability.ipynb",
]
PLOTLY = "application/vnd.plotly.v1+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

_executed: dict[str, Any] = {}


def test_the_notebooks_are_there_and_stored_without_outputs() -> None:
    assert sorted(p.name for p in NOTEBOOKS_DIR.glob("*.ipynb")) == EXPECTED
    for name in EXPECTED:
        nb = nbformat.read(NOTEBOOKS_DIR / name, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, name
        assert "progress=False" not in "".join(
            c.source for c in nb.cells if c.cell_type == "code" and name != "formats.ipynb"
        ), name


def executed(name: str) -> Any:
    """The notebook executed once per test session, any error failing the caller."""
    if name not in _executed:
        from nbclient import NotebookClient

        nb = nbformat.read(NOTEBOOKS_DIR / name, as_version=4)
        NotebookClient(
            nb,
            timeout=180,
            kernel_name="python3",
            store_widget_state=True,
            resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
        ).execute()
        _executed[name] = nb
    return _executed[name]


def outputs(nb: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                yield i, out


def cell_out(nb: Any, source_start: str, exact: bool = False) -> list[dict[str, Any]]:
    """The outputs of the one code cell whose source starts with (or is) `source_start`."""
    cells = [
        c
        for c in nb.cells
        if c.cell_type == "code"
        and (c.source == source_start if exact else c.source.startswith(source_start))
    ]
    assert len(cells) == 1, source_start
    return list(cells[0].outputs)


def html_of(outs: list[dict[str, Any]]) -> str:
    return "".join(str(o.get("data", {}).get("text/html", "")) for o in outs)


def text_of(outs: list[dict[str, Any]]) -> str:
    return "".join(
        str(o.get("data", {}).get("text/plain", "")) + str(o.get("text", "")) for o in outs
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_without_errors(name: str) -> None:
    nb = executed(name)
    errors = [o for _, o in outputs(nb) if o.get("output_type") == "error"]
    assert not errors, [f"{e['ename']}: {e['evalue']}" for e in errors]
    stderr = [o["text"] for _, o in outputs(nb) if o.get("name") == "stderr"]
    assert not stderr, stderr  # nothing pink: no warnings, no text progress on stderr


@pytest.mark.slow
def test_quickstart_shows_the_tree_table_chart_and_transcript() -> None:
    nb = executed("quickstart.ipynb")
    run_outs = cell_out(nb, "run = cl.run(")
    # the live tree's output was replaced by the static summary at the end of the run
    assert len(run_outs) == 1 and WIDGET_VIEW not in run_outs[0]["data"]
    assert "36 instances: 30 passed, 6 failed" in text_of(run_outs)
    # the widget did run: its saved state has the progress bar at 36 of 36
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    bars = [m["state"] for m in state.values() if m["model_name"] == "IntProgressModel"]
    assert any(b["value"] == 36 and b["max"] == 36 for b in bars), bars
    # two cases fail on purpose, as the prose says
    card = html_of(cell_out(nb, "run", exact=True))
    assert "expense-policy-limit" in card and "expense-dynamic-receipt" in card
    assert "dataTable" in card or "DataTable" in card  # the interactive table
    # charts are Plotly figures with a text/html fallback
    for start in ("run.plot.pass_rates()", "run.plot.checkpoints()"):
        data = cell_out(nb, start)[0]["data"]
        assert PLOTLY in data and "text/html" in data
        assert "plotly.js v" not in data["text/html"]  # plotly.js is injected once by reports
    # quick tests: the first passes, the magic's fails on the approval rule
    assert text_of(cell_out(nb, "cl.ask(")).startswith("PASS")
    magic = text_of(cell_out(nb, "%%ask demo:expense"))
    assert magic.startswith("FAIL") and "approval" in magic


@pytest.mark.slow
def test_stability_figures_match_the_prose() -> None:
    nb = executed("stability.ipynb")
    summary = text_of(cell_out(nb, "run", exact=True))
    assert "50 instances" in summary
    table = html_of(cell_out(nb, "run.stability()", exact=True))
    assert "new ITable(" in table  # run.stability() shows as an interactive table
    for word in ("stable", "mostly stable", "unstable", "highly unstable", "always fails"):
        assert f"{word}</span>" in table, word
    assert "highly_unstable" not in table  # cancel-order never passes: it always fails
    passk = text_of(cell_out(nb, "run.pass_k_table(ks="))
    refund = [line.split() for line in passk.splitlines() if "refund-policy" in line]
    # "refund-policy passed 9 of 10 runs: pass^1 0.9, pass^5 0.5, pass^10 0" and
    # thinkingbox's (c/n)^k "stays above 0 (0.9^10 = 0.35)"
    assert [(r[3], r[4], r[5], r[6]) for r in refund] == [
        ("9", "1", "0.900000", "0.900000"),
        ("9", "3", "0.700000", "0.729000"),
        ("9", "5", "0.500000", "0.590490"),
        ("9", "10", "0.000000", "0.348678"),
    ]
    # thinkingbox's figures for 9 of 10: eval_utils.cred_int(9, 10) = (0.6187, 0.9890) and
    # prob_in_zone(9, 10) = 0.7392, so not in the goldilocks zone
    tb = text_of(cell_out(nb, "cols = "))
    [row] = [line.split() for line in tb.splitlines() if "refund-policy" in line]
    assert row[2:7] == ["10", "9", "61.868523", "98.898833", "0.739216"]
    assert "in_goldilocks_zone" in tb
    fig = json.dumps(cell_out(nb, "run.plot.pass_rates()")[0]["data"][PLOTLY])
    assert "refund-policy" in fig


@pytest.mark.slow
def test_prompt_iteration_compares_variants_with_cost_and_finds_a_run_in_the_history() -> None:
    nb = executed("prompt_iteration.ipynb")
    exp = text_of(cell_out(nb, "suite = cl.load("))
    assert "expense/both" in exp and "expense_lite/plain" in exp
    board = html_of(cell_out(nb, "exp.leaderboard()"))
    # best first: only the full prompt on the large model passes everything
    assert board.index("expense/both") < board.index("expense_lite/both")
    assert "cost (USD)" in board and "pooled p (Holm)" in board and "cases better" in board
    assert "expense-policy-limit" in html_of(cell_out(nb, "exp.matrix()"))
    assert PLOTLY in cell_out(nb, 'exp.plot.tradeoff(x="cost")')[0]["data"]
    short = text_of(cell_out(nb, "SHORT = "))
    assert "36 instances: 36 passed, 0 failed" in short and "cost $" in short
    past = html_of(cell_out(nb, 'past = cl.history(suite="expense")'))
    assert "expense prompts" in past and "expense_lite" in past
    comparison = html_of(cell_out(nb, 'tried = past[past["experiment"]'))
    assert "expense_lite" in comparison and "receipt" in comparison
    assert text_of(cell_out(nb, "server.terminate()")).strip() in ("0", "-15")


@pytest.mark.slow
def test_formats_runs_one_suite_per_format() -> None:
    nb = executed("formats.ipynb")
    overview = text_of(cell_out(nb, "import convlab as cl"))
    for fmt in ("JSONL", "JSON evaluation suite", "YAML", "Python test files"):
        assert fmt in overview
    assert PLOTLY in cell_out(nb, 'runs["expense"].plot.checkpoints()')[0]["data"]
    assert PLOTLY in cell_out(nb, 'runs["finance"].plot.turns()')[0]["data"]
    calls = html_of(cell_out(nb, 'runs["cloud_drive"].table("tool_calls")'))
    assert "delete_file" in calls


@pytest.mark.slow
def test_stability_leaves_the_networks_failures_out_of_the_pass_rate() -> None:
    nb = executed("stability.ipynb")
    card = text_of(cell_out(nb, "def shaky_bot("))
    assert "not passed, by blame: agent 14, infrastructure 16" in card
    table = text_of(cell_out(nb, "shaky.stability()"))
    hours = next(line.split() for line in table.splitlines() if "opening-hours" in line)
    # 6 runs judged, all passed; 4 dropped calls left out, not counted as failures
    assert hours[2:5] == ["6", "6", "100.000000"] and hours[5:] == ["4", "infrastructure", "4"]


@pytest.mark.slow
def test_distributed_runs_on_ray_with_the_live_tree_and_stops() -> None:
    nb = executed("distributed.ipynb")
    # a private local Ray cluster: the tree's final card, the same results as here
    first = cell_out(nb, "import convlab as cl")
    assert len(first) == 1 and WIDGET_VIEW not in first[0]["data"]
    assert "36 instances: 30 passed, 6 failed" in text_of(first)
    assert text_of(cell_out(nb, 'run.settings["executor"]')).startswith("{'kind': 'ray'")
    assert text_of(cell_out(nb, "here = cl.run(")).strip().endswith("True True")
    # the live tree said how many workers ran and which one ran each instance
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    html = " ".join(str(m["state"].get("value", "")) for m in state.values())
    assert "on 2 workers (local Ray cluster" in html
    # the next cell reused the cluster and its workers
    warm = text_of(cell_out(nb, "import ray"))
    assert warm.startswith("True") and "36 instances: 30 passed, 6 failed" in warm
    # stop keeps what finished, the rest cancelled
    assert text_of(cell_out(nb, "while len(handle.results)")).strip() == "cancelled 240 True"


@pytest.mark.slow
def test_stability_says_why_the_flaky_case_fails() -> None:
    nb = executed("stability.ipynb")
    outs = cell_out(nb, "def expense_bot(")
    assert "20 instances: 15 passed, 5 failed" in text_of(outs[:-1])  # the run's card
    why = text_of(outs[-1:])
    assert why.strip("'\"\n") == (
        "Runs that called lookup_policy at turn 2 passed 15 of 15; runs that skipped it "
        "passed 0 of 5 (p < 0.001)."
    )  # what the prose says: it sometimes skips the lookup, and fails then
    view = html_of(cell_out(nb, 'flaky.divergence("file-dinner")'))
    assert "Divergence of file-dinner · branches" in view and "cl-sxs" in view and ">fork<" in view
    assert "lookup_policy(" in view
    chart = cell_out(nb, 'flaky.plot.divergence("file-dinner")')[0]["data"]
    assert chart[PLOTLY]["data"][0]["type"] == "sankey" and "text/html" in chart
    paths = text_of(cell_out(nb, "flaky.stability()"))
    assert "file-dinner" in paths and " 2 " in paths and "0.75" in paths
