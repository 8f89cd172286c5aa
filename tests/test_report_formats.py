"""Every report format for ONE run holding standard, turn-based, dynamic and code-test cases
(the four example suites, each on its demo agent, merged into one Run), read back or parsed:
`.json` (Yao's report shape + the Run) and `.jsonl` (Yao's records) load losslessly,
JUnit XML parses with junitparser (one testcase per instance, errors apart from failures),
the Markdown renders with markdown-it, the HTML page is whole and offline. Then hostile agent
text (markup, `javascript:` links, terminal escapes) and secrets (an API key, a URL password
and its Basic-auth base64) against every format."""

from __future__ import annotations

import base64
import html
import json
import re
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import junitparser
import pytest
import yaml
from markdown_it import MarkdownIt

import convlab as cl
from convlab.agents.protocol import as_agent
from convlab.model.run import Run
from convlab.model.suite import Suite

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())
DATA = (".json", ".jsonl")
EVERY = (".json", ".jsonl", ".md", ".html", ".xml", ".ipynb")
HOSTILE = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=2">',
    '<a href="javascript:window.__pwned=3">click</a>',
    "[x](javascript:window.__pwned=4)",
    "red \x1b[31mALERT\x1b[0m title \x1b]0;t\x07 done",
]


@cache
def combined_run() -> Run:
    """expense (standard + dynamic), catalog (turns, variants), finance (HoloDeck multi-turn),
    cloud_drive (code tests): each run twice on its demo agent, as one Run."""
    runs = []
    for spec in EXPECTED.values():
        suite = cl.load(EXAMPLES / spec["path"])
        agent = as_agent(spec["agent"])
        runs.append(cl.run(suite, agent, simulator=spec["simulator"], runs=2, progress=False))
    suite = Suite(
        id="examples",
        name="four example suites",
        cases=[c for r in runs for c in (r.suite.cases if r.suite else [])],
        sources=[s for r in runs for s in (r.suite.sources if r.suite else [])],
    )
    return Run(
        id="combined",
        suite=suite,
        agent="demo agents by folder",
        settings=runs[0].settings,
        results=[x for r in runs for x in r.results],
        started_at=runs[0].started_at,
        finished_at=runs[-1].finished_at,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("formats")
    run = combined_run()
    return {s: run.save(tmp / f"run{s}") for s in (".json", ".jsonl", ".md", ".html", ".xml")}


def test_the_run_has_every_kind_of_case():
    run = combined_run()
    modes = {c.mode for c in run.suite.cases} if run.suite else set()
    assert {"standard", "dynamic"} <= modes, modes
    assert any(len(r.turns) > 1 for r in run.results)  # turn-based
    assert any(":test_" in r.case_id for r in run.results)  # code tests
    assert {r.status for r in run.results} >= {"passed", "failed", "error"}


# ---------------------------------------------------------------- data formats


def test_json_has_the_seed_shape_and_the_run(saved):
    run = combined_run()
    data = json.loads(saved[".json"].read_text())
    s = data["summary"]
    for key in ("total", "passed", "failed", "skipped", "errors", "timeouts", "duration_ms"):
        assert isinstance(s[key], int | float), key
    assert s["agent_id"] == run.agent
    assert s["total"] == len(run.results) == s["total_runs"]
    assert s["pass_rate"] == s["overall_pass_rate"] == run.summary["pass_rate"]
    assert s["runs_per_case"] == 2
    assert len(data["results"]) == len(run.results)
    by_id = {r["id"]: r for r in data["results"]}
    greeting = by_id["expense-greeting"]
    assert greeting["input"] == [{"role": "user", "content": "Hello"}]
    assert isinstance(greeting["output"], str) and greeting["output"]
    assert greeting["status"] == "passed" and greeting["duration_ms"] >= 0
    dynamic = by_id["expense-dynamic"]
    assert len(dynamic["turns"]) > 1 and dynamic["checkpoints"]
    stab = {r["id"]: r for r in data["stability_results"]}
    assert set(stab) == {c.id for c in run.suite.cases} if run.suite else False
    for key in ("runs", "passed", "failed", "pass_rate", "stable", "stability_class"):
        assert key in stab["expense-greeting"], key
    assert data["metadata"]["started_at"] == run.started_at
    assert data["metadata"]["completed_at"] == run.finished_at


@pytest.mark.parametrize("suffix", DATA)
def test_data_formats_load_back_losslessly(saved, suffix):
    back = cl.load_run(saved[suffix])
    assert back.to_dict() == combined_run().to_dict()
    assert back.summary == combined_run().summary


def test_a_plain_run_dump_still_loads(tmp_path):
    """`.json` files written before Yao's report keys were added hold just the Run model."""
    run = combined_run()
    (tmp_path / "old.json").write_text(run.to_json())
    assert cl.load_run(tmp_path / "old.json").to_dict() == run.to_dict()


def test_a_seed_report_json_loads(tmp_path):
    """A `.json` that `yao agent test -o report.json` wrote: results keyed by `id`."""
    seed = {
        "summary": {"total": 1, "passed": 1, "failed": 0, "agent_id": "assistants.expense"},
        "environment": {"user_id": "test-user"},
        "results": [{"id": "t1", "status": "passed", "input": "hi", "output": "hello"}],
        "metadata": {"started_at": "2025-12-25T10:00:00Z"},
    }
    (tmp_path / "seed.json").write_text(json.dumps(seed))
    run = cl.load_run(tmp_path / "seed.json")
    assert [(r.case_id, r.status) for r in run.results] == [("t1", "passed")]
    assert run.results[0].metadata["output"] == "hello"


def test_jsonl_records_and_the_seeds_jq_filter(saved):
    """`jq 'select(.type == "summary")'` (the CI example of Yao's agent-test README), done in
    Python."""
    records = [json.loads(line) for line in saved[".jsonl"].read_text().splitlines()]
    kinds = [r["type"] for r in records]
    n = len(combined_run().results)
    cases = len(combined_run().suite.cases) if combined_run().suite else 0
    assert kinds == ["start"] + ["result"] * n + ["stability"] * cases + ["summary"]
    summaries = [r for r in records if r.get("type") == "summary"]
    assert len(summaries) == 1
    assert summaries[0]["total"] == n
    assert summaries[0]["pass_rate"] == combined_run().summary["pass_rate"]
    assert all({"id", "status", "duration_ms", "output"} <= set(r) for r in records[1 : n + 1])


# ---------------------------------------------------------------- JUnit, Markdown, HTML


def test_junit_parses_with_one_testcase_per_instance(saved):
    run = combined_run()
    xml = junitparser.JUnitXml.fromfile(str(saved[".xml"]))
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    cases = [c for s in suites for c in s]
    assert len(cases) == len(run.results)
    assert len({c.name for c in cases}) == len(cases)  # repeated runs are named apart
    kinds: Counter[str] = Counter()
    for c in cases:
        kinds.update(type(res).__name__ for res in c.result)
    statuses = Counter(r.status for r in run.results)
    assert kinds["Failure"] == statuses["failed"] > 0
    assert kinds["Error"] == statuses["error"] + statuses["timeout"] > 0
    assert kinds["Skipped"] == 0
    suite = suites[0]
    assert (suite.tests, suite.failures, suite.errors) == (
        len(run.results),
        statuses["failed"],
        statuses["error"],
    )


def _md_tables(text: str) -> list[list[list[str]]]:
    """Each table as rows of cell texts, from markdown-it's tokens (GFM tables on)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    for t in tokens:
        if t.type == "table_open":
            tables.append([])
        elif t.type == "tr_open":
            tables[-1].append([])
        elif t.type == "inline" and tables and tables[-1] and t.level > 3:
            tables[-1][-1].append(t.content)
    return tables


def test_markdown_renders_with_its_tables(saved):
    run = combined_run()
    text = saved[".md"].read_text()
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<h1>" in html and "<table>" in html
    cases, failures = _md_tables(text)
    assert cases[0] == ["case", "runs", "passed", "pass rate", "stability", "not the agent's"]
    assert len(cases) - 1 == len(run.suite.cases) if run.suite else False
    assert all(len(row) == 6 for row in cases)
    bad = [r for r in run.results if r.status != "passed"]
    assert len(failures) - 1 == len(bad)
    assert failures[0][5] == "blame" and all(len(row) == 7 for row in failures)
    assert f"{run.summary['pass_rate']:.1f}%" in text


def test_html_is_one_offline_page_with_the_notebook_views(saved):
    run = combined_run()
    page = saved[".html"].read_text()
    assert page.count("<html") == 1
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=[\"']?(https?:)?//", page)
    assert "itables.org" not in page  # no link that a click would send to the network
    assert "cl-card" in page  # summary card
    assert page.count("Plotly.newPlot") >= 3 and page.count("plotly.js v") == 1
    assert "dataTable" in page or "DataTable" in page  # sortable tables
    failures = page.split("Instances that did not pass", 1)[1]
    for r in run.results:
        if r.status != "passed":
            assert f"<code>{r.case_id}</code>" in failures, r.case_id
    assert "cl-turn" in failures and "cl-bubble" in failures  # transcripts


@pytest.mark.slow
@pytest.mark.parametrize("suffix", DATA)
def test_convlab_report_rerenders_a_saved_run(saved, tmp_path, suffix):
    out = tmp_path / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "convlab.cli", "report", str(saved[suffix]), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert "expense-dynamic" in page and "cloud_drive.py:test_delete_without_user" in page


@pytest.mark.slow
def test_ipynb_report_is_an_executed_notebook(tmp_path):
    import nbformat

    path = combined_run().save(tmp_path / "run.ipynb")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


# ---------------------------------------------------------------- hostile text


def hostile_run(tmp: Path) -> Run:
    """Replies (and a case id) holding markup, `javascript:` links and terminal escapes."""
    reply = " ".join(HOSTILE)

    def agent(messages: list[dict[str, Any]]) -> str:
        return reply

    cases = [
        {"id": "says-hostile", "input": "hi", "expected": "a calm answer"},
        {"id": "id \x1b[2J<b>x</b>", "input": "hi", "assert": {"type": "contains", "value": "x"}},
    ]
    (tmp / "hostile.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return cl.run(cl.load(tmp / "hostile.jsonl"), agent, progress=False)


def test_md_and_xml_hold_no_raw_escapes_and_no_live_javascript_links(tmp_path):
    run = hostile_run(tmp_path)
    assert any("\x1b" in (r.error or "") for r in run.results) or any(
        "\x1b" in r.case_id for r in run.results
    )
    md = run.save(tmp_path / "x.md").read_text()
    xml = run.save(tmp_path / "x.xml").read_text()
    for text in (md, xml):
        assert "\x1b" not in text and "\x07" not in text
    lax = MarkdownIt("commonmark").enable("table")
    lax.validateLink = lambda url: True  # type: ignore[method-assign]  # a renderer that trusts links
    rendered = lax.render(md)
    assert not re.search(r"<a[^>]+href=\"javascript:", rendered, re.I), rendered
    assert "<script" not in rendered and "<img" not in rendered
    assert junitparser.JUnitXml.fromstring(xml.encode()) is not None


# ---------------------------------------------------------------- secrets


def test_no_secret_reaches_any_format(tmp_path, monkeypatch):
    from test_agents_openai import Server, fake_model

    key = "sk-test-VERYSECRET-0123456789"
    basic = base64.b64encode(b"user:secretpw").decode()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    cases = [
        {"id": "hello", "input": "Hello", "expected": "You said: Hello"},
        {"id": "echo-key", "input": "fault:echo-key"},
        {"id": "wrong", "input": "Hi", "expected": "something else"},
    ]
    (tmp_path / "secrets.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = cl.load(tmp_path / "secrets.jsonl")
    with Server(fake_model) as srv:
        # The key from OPENAI_API_KEY; the server echoes it back in an error body.
        keyed = cl.run(suite, cl.agents.openai("test-model", base_url=srv.url), progress=False)
        assert srv.seen, "the agent never reached the fake server"
        base = f"http://user:secretpw@127.0.0.1:{srv.port}/v1"
        in_url = cl.run(suite, cl.agents.openai("test-model", base_url=base), progress=False)
    assert {r.case_id: r.status for r in keyed.results} == {
        "hello": "passed",
        "echo-key": "error",
        "wrong": "failed",
    }
    assert in_url.results and "127.0.0.1" in in_url.agent
    for name, run in (("keyed", keyed), ("in_url", in_url)):
        for suffix in EVERY:
            text = run.save(tmp_path / f"{name}{suffix}").read_text()
            for secret in (key, "secretpw", basic):
                assert secret not in text, f"{secret!r} is in the {name} {suffix} report"


def test_convlab_report_re_renders_a_saved_run_into_every_data_format(tmp_path: Path) -> None:
    run = cl.run("examples/expense", "demo:expense", progress=False)
    src = run.save(tmp_path / "run.json")
    for suffix in (".jsonl", ".md", ".xml", ".json"):
        out = tmp_path / f"again{suffix}"
        proc = subprocess.run(
            [sys.executable, "-m", "convlab.cli", "report", str(src), "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert out.read_text(encoding="utf-8").strip()
    assert cl.load_run(tmp_path / "again.jsonl").summary == run.summary
    assert "expense-policy-limit" in (tmp_path / "again.md").read_text(encoding="utf-8")


def test_markdown_shows_ids_in_code_as_they_are_and_no_bidi_control_raw(tmp_path):
    """A case id in a code span reads no HTML entity (GitHub would show `&lt;`), keeps its
    backticks and pipes; a right-to-left override (in an id or a reason) is never written
    raw, so the report cannot read other than it is stored."""
    case_id = "a<b>&c|d`e\u202eevil"
    check = {"type": "contains", "value": "zz\u202e"}  # its failure is the reason shown
    cases = [{"id": case_id, "input": "hi", "assert": check}]
    (tmp_path / "ids.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    run = cl.run(cl.load(tmp_path / "ids.jsonl"), lambda m: "no", progress=False)
    md = run.save(tmp_path / "ids.md").read_text()
    assert "\u202e" not in md
    rendered = MarkdownIt("commonmark").enable("table").render(md)
    codes = [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", rendered)]
    shown = case_id.replace("\u202e", "\\u202e")
    assert codes.count(shown) == 2, codes  # in the cases table and in the failures table
    assert "contain 'zz\\u202e'" in html.unescape(re.sub(r"<[^>]+>", "", rendered))
