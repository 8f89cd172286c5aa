"""Saved reports without a browser: Markdown, JUnit XML, the standalone HTML page, the
`.ipynb` report, and `convlab report` (exit codes, saved `.json` / `.jsonl` runs)."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

import convlab as cl
from convlab.cli import main
from convlab.model.conversation import ToolCall
from convlab.model.records import AssertionResult, CaseResult, Observation, TurnResult
from convlab.model.run import Run
from convlab.report.html import run_html_report
from convlab.report.junit import run_junit
from convlab.report.markdown import cell, run_markdown

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
XSS = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>'


def expense_run() -> Run:
    return cl.run(cl.load(EXAMPLES / "expense"), "demo:expense", runs=2, progress=False)


def statuses_run() -> Run:
    """One instance of every status, with hostile text in ids, replies and messages."""
    failed = AssertionResult(
        kind="contains",
        status="failed",
        message="wanted | pipe\nand newline",
        expected="ok",
        actual=XSS,
    )
    turn = TurnResult(
        index=0,
        observation=Observation(
            text=XSS + "\x1b[31m\x00",
            tool_calls=[ToolCall("<b>tool</b>", {"q": XSS}, {"r": "</script>"})],
        ),
        assertions=[failed],
        status="failed",
    )
    results = [
        CaseResult(case_id="ok", status="passed", duration_ms=5),
        CaseResult(case_id="<i>bad|id</i>", status="failed", turns=[turn], error=XSS),
        CaseResult(case_id="err", status="error", error="boom\x07 & <more>"),
        CaseResult(case_id="slow", status="timeout", error="timed out after 1 s"),
        CaseResult(case_id="skip", status="skipped", error="not today"),
        CaseResult(case_id="blk", status="blocked", error="external write not allowed"),
        CaseResult(case_id="cxl", status="cancelled"),
    ]
    return Run(id="r1", agent="agent <x>", results=results, started_at="2026-01-02T03:04:05")


# ---------------------------------------------------------------- markdown


def test_markdown_cell_escapes_pipes_newlines_and_html():
    assert cell("a|b\nc\r\nd") == "a\\|b<br>c<br>d"
    assert cell("<img src=x>") == "&lt;img src=x&gt;"
    assert cell("back\\|slash") == "back\\\\\\|slash"
    assert cell(float("nan")) == "" and cell(None) == ""
    assert cell("$5 and $6") == "\\$5 and \\$6"


def test_markdown_report_has_summary_cases_and_failures():
    md = run_markdown(expense_run())
    assert md.startswith("# convlab report · suite expense · agent demo:expense")
    assert "**24 instances**: 20 passed, 4 failed, 0 errors" in md
    assert "| `expense-policy-limit` | 2 | 0 | 0.0% | always fails |" in md
    assert "manager approval" in md and "## Failures" in md


def test_markdown_tables_stay_tables_with_hostile_text():
    md = run_markdown(statuses_run())
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    for row in rows:  # every row has as many unescaped pipes as its header
        cells = re.split(r"(?<!\\)\|", row.replace("\\\\", ""))
        assert len(cells) - 2 in (6, 7), row  # cases: 6 columns, failures: 7
    assert "<img" not in md and "<script" not in md and "&lt;img src=x" in md
    assert "\\|id" in md


# ---------------------------------------------------------------- junit


def test_junit_is_valid_xml_with_one_testcase_per_instance():
    xml = run_junit(statuses_run())
    root = ET.fromstring(xml.encode("utf-8"))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("7", "1", "2")
    assert suite.get("skipped") == "3"
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    assert len(cases) == 7
    bad = cases["<i>bad|id</i>"].find("failure")
    assert bad is not None and bad.get("message") == XSS  # escaped on write, exact on read
    assert "expected: 'ok'" in (bad.text or "") and "\\x1b[31m\\x00" in (bad.text or "")
    err = cases["err"].find("error")
    assert err is not None and err.get("message") == "boom\\x07 & <more>"
    assert cases["slow"].find("error") is not None
    assert cases["blk"].find("skipped") is not None and cases["ok"].find("*") is None
    assert cases["ok"].get("time") == "0.005"


def test_junit_names_repeated_instances_apart():
    root = ET.fromstring(run_junit(expense_run()))
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert len(names) == len(set(names)) == 24
    assert "expense-greeting (run 1)" in names


# ---------------------------------------------------------------- standalone html


def test_html_report_is_one_offline_page():
    page = run_html_report(expense_run())
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    assert "<title>convlab report: expense · demo:expense</title>" in page
    assert page.count("plotly.js v") == 1  # plotly.min.js inlined once
    assert page.count("data-convlab-bundle=") == 1  # the DataTables bundle once
    assert page.count("Plotly.newPlot") >= 4  # pass rates, stability, durations, checkpoints
    assert "24</b> instances" in page or "24 instances" in page
    assert "manager approval" in page
    tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", page)
    assert not [t for t in tags if re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", t)]


def test_html_report_escapes_agent_text():
    page = run_html_report(statuses_run())
    assert "<img src=x" not in page and "<script>window.__pwned" not in page
    assert "&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;" in page
    assert "<b>tool</b>" not in page and "&lt;i&gt;bad|id&lt;/i&gt;" in page


def test_savers_write_each_suffix_atomically(tmp_path):
    run = expense_run()
    for name in ("r.md", "r.xml", "r.html"):
        assert run.save(tmp_path / name).stat().st_size > 1000
    ET.parse(tmp_path / "r.xml")
    assert (tmp_path / "r.md").read_text().startswith("# convlab report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.md", "r.xml"]


def test_report_modules_import_no_view_libraries():
    code = (
        "import sys, convlab, convlab.cli, convlab.analysis.frames\n"
        "import convlab.report.notebook, convlab.report.html\n"
        "import convlab.report.markdown, convlab.report.junit\n"
        "heavy = ('plotly', 'ipywidgets', 'IPython', 'itables', 'nbconvert', 'nbclient')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- convlab report: usage


def _exit(argv: list[str]) -> int | str | None:
    """`main(argv)`'s exit code, whether it returns it or argparse raises SystemExit."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_report_cli_bad_input_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing.ipynb"), "-o", str(tmp_path / "o.html")]) == 2
    assert "no such file" in capsys.readouterr().err
    weird = tmp_path / "notes.txt"
    weird.write_text("x")
    assert main(["report", str(weird), "-o", str(tmp_path / "o.html")]) == 2
    assert "cannot make a report from .txt" in capsys.readouterr().err
    run_file = tmp_path / "run.json"
    expense_run().save(run_file)
    assert main(["report", str(run_file), "-o", str(tmp_path / "o.pdf")]) == 2
    assert "use .html (offline page) or .ipynb" in capsys.readouterr().err
    assert _exit(["report", str(run_file), "-o", str(tmp_path / "o.html"), "--timeout", "x"]) == 2
    assert "--timeout" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    assert main(["report", str(broken), "-o", str(tmp_path / "o.html")]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.json", "notes.txt", "run.json"]


def test_report_cli_names_the_extra_when_nbconvert_is_missing(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nbconvert" else real(name)
    )
    nb = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), nb)
    assert main(["report", str(nb), "-o", str(tmp_path / "o.html")]) == 2
    assert "pip install 'convlab[report]'" in capsys.readouterr().err


# ---------------------------------------------------------------- convlab report: kernels


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_report_cli_failing_cell_exits_1_and_writes_nothing(tmp_path, capsys):
    nb = _notebook(tmp_path / "bad.ipynb", "x = 1", "print('hi')\n1 / 0", "never = True")
    assert main(["report", str(nb), "-o", str(tmp_path / "out.html")]) == 1
    err = capsys.readouterr().err
    assert "cell 2 failed: ZeroDivisionError: division by zero" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.ipynb"]


@pytest.mark.slow
def test_report_cli_timeout_names_the_cell(tmp_path, capsys):
    nb = _notebook(tmp_path / "slow.ipynb", "x = 1", "import time\ntime.sleep(60)")
    assert main(["report", str(nb), "-o", str(tmp_path / "out.ipynb"), "--timeout", "2s"]) == 1
    assert "cell 2 failed: Timeout: no result in 2 s" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slow.ipynb"]


@pytest.mark.slow
def test_report_cli_runs_the_notebook_in_its_folder(tmp_path):
    (tmp_path / "data.txt").write_text("local data")
    nb = _notebook(tmp_path / "n.ipynb", "open('data.txt').read()")
    out = tmp_path / "sub" / "n.ipynb"
    assert main(["report", str(nb), "-o", str(out)]) == 0
    done = nbformat.read(out, as_version=4)
    assert done.cells[0].outputs[0]["data"]["text/plain"] == "'local data'"


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_report_from_a_saved_run(tmp_path, suffix):
    run_file = tmp_path / f"run{suffix}"
    expense_run().save(run_file)
    html_out, nb_out = tmp_path / "out" / "report.html", tmp_path / "out" / "report.ipynb"
    assert main(["report", str(run_file), "-o", str(html_out)]) == 0
    assert main(["report", str(run_file), "-o", str(nb_out)]) == 0
    page = html_out.read_text(encoding="utf-8")
    assert page.count("plotly.js v") == 1 and page.count("data-convlab-bundle=") == 1
    assert "24</b> instances" in page and "Instances that did not pass" in page
    assert "cdnjs" not in page and "unpkg.com" not in page and "require.min.js" not in page
    assert "application/vnd.jupyter.widget-state+json" not in page
    nb = nbformat.read(nb_out, as_version=4)
    assert nb.cells[1].source.startswith("import convlab as cl")
    assert f"'../run{suffix}'" in nb.cells[1].source  # relative to the notebook: move both
    assert all(c.outputs for c in nb.cells if c.cell_type == "code")
    kinds = {k for c in nb.cells if c.cell_type == "code" for o in c.outputs for k in o.data}
    assert "application/vnd.plotly.v1+json" in kinds and "text/html" in kinds


@pytest.mark.slow
def test_run_save_ipynb_keeps_the_run_beside_it(tmp_path):
    path = expense_run().save(tmp_path / "report.ipynb")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.ipynb", "report.run.json"]
    nb = nbformat.read(path, as_version=4)
    assert "cl.load_run('report.run.json')" in nb.cells[1].source
    assert nb.cells[1].outputs


@pytest.mark.slow
def test_report_cli_prints_no_kernel_warning_and_names_the_page(tmp_path):
    nb = _notebook(tmp_path / "my-analysis.ipynb", "1 + 1")
    proc = subprocess.run(
        [sys.executable, "-m", "convlab.cli", "report", str(nb), "-o", str(tmp_path / "o.html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr and "encryption" not in proc.stderr, proc.stderr
    assert "<title>my-analysis</title>" in (tmp_path / "o.html").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-analysis.ipynb", "o.html"]


def test_page_title_is_the_title_metadata_then_the_first_heading_then_the_name():
    from convlab.report.notebook import notebook_title

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("1"),
            nbformat.v4.new_markdown_cell("Intro text\n\n## The `expense` suite \\#2 ##\n# Later"),
        ]
    )
    assert notebook_title(nb, "file") == "The expense suite #2"
    nb.metadata["title"] = "Set by hand"
    assert notebook_title(nb, "file") == "Set by hand"
    assert notebook_title(nbformat.v4.new_notebook(), "file") == "file"
    assert notebook_title(nbformat.v4.new_notebook()) == "Notebook"


@pytest.mark.slow
def test_report_keeps_only_the_widget_models_an_output_still_shows(tmp_path):
    nb = _notebook(
        tmp_path / "w.ipynb",
        "import ipywidgets as w\nw.IntSlider(value=7)",
        "import convlab as cl\nrun = cl.run(cl.load('suite.jsonl'), 'demo:expense')",
    )
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    assert main(["report", str(nb), "-o", str(tmp_path / "out.ipynb")]) == 0
    done = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    state = done.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    names = sorted(m["model_name"] for m in state.values())
    # the slider with its layout and style; the run's live tree (replaced by its summary) is gone
    assert names == ["IntSliderModel", "LayoutModel", "SliderStyleModel"], names
    assert "1 instance" in str(done.cells[1].outputs)
