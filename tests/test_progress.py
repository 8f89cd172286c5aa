"""The live tree, built without a kernel: its widgets' state after real runs."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest

import convlab as cl
from convlab.engine.events import CaseFinished, CaseStarted, RunFinished, RunStarted
from convlab.model.records import CaseResult
from convlab.model.run import Run
from convlab.notebook.progress import LiveTree

EXPENSE = "examples/expense"


class FakeHandle:
    """Stands in for IPython's DisplayHandle: records what replaced the live view."""

    def __init__(self) -> None:
        self.updates: list[tuple[Any, dict[str, Any]]] = []

    def update(self, obj: Any, **kw: Any) -> None:
        self.updates.append((obj, kw))


def _run_with_tree(suite: Any, agent: Any, **kw: Any) -> tuple[Run, LiveTree, FakeHandle]:
    tree = LiveTree()
    handle = FakeHandle()
    tree._handle = handle
    run = cl.run(suite, agent, progress=tree, **kw)
    return run, tree, handle


def test_counts_and_bar_match_the_run() -> None:
    run, tree, _ = _run_with_tree(EXPENSE, "demo:expense", runs=2)
    s = run.summary
    assert tree.counts == {"passed": s["passed"], "failed": s["failed"]}
    assert tree.bar.max == s["total"] == 24
    assert tree.bar.value == 24
    assert tree.bar.bar_style == "danger"  # two cases fail on purpose
    header = tree.header.value
    assert "24/24" in header
    assert f"<b>{s['passed']}</b> passed" in header
    assert f"<b>{s['failed']}</b> failed" in header
    assert "<b>0</b> running" in header
    assert "took" in header  # the clock stopped


def test_tree_shows_turns_tool_calls_checkpoints_and_failed_assertions() -> None:
    run, tree, _ = _run_with_tree(EXPENSE, "demo:expense")
    body = tree.body.value
    failing = [r for r in run.results if r.status != "passed"]
    assert failing
    for r in failing:
        assert r.case_id in body
    # a failed instance lists its turns (user -> reply) and the failed assertion's message
    assert "turn 1" in body and "→" in body
    assert "must be routed for manager approval" in body
    # tool calls with their arguments
    assert "↳" in body and "create_expense(" in body
    # a dynamic case's checkpoints: reached at turn N, or not reached
    assert "checkpoint" in body and ("reached at turn" in body or "not reached" in body)


def test_agent_text_is_escaped_everywhere() -> None:
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"

    def agent(messages: list[dict[str, Any]]) -> Any:
        return cl.Reply(text=evil, tool_calls=[cl.ToolCall("t<b>", {"q": evil})])

    _, tree, handle = _run_with_tree(EXPENSE, agent)
    for html in (tree.header.value, tree.body.value, tree.snapshot_html()):
        assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in tree.body.value
    final = handle.updates[-1][0]["text/html"]
    assert "<script>alert" not in final and "<img src=x" not in final


def test_the_static_summary_replaces_the_widget_at_the_end() -> None:
    run, tree, handle = _run_with_tree(EXPENSE, "demo:expense")
    assert len(handle.updates) == 1
    bundle, kw = handle.updates[0]
    assert kw == {"raw": True}
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    html = bundle["text/html"]
    s = run.summary
    assert f"{s['total']} instances" in bundle["text/plain"]
    assert f"<b>{s['passed']}</b> passed" in html and f"<b>{s['failed']}</b> failed" in html
    # the failing instances with their reasons
    for r in run.results:
        if r.status != "passed":
            assert r.case_id in html
    assert "did not pass" in html
    assert tree._repr_mimebundle_() == bundle  # shown again later: the summary, not a dead view


def test_live_bundle_is_a_widget_view_plus_a_static_snapshot() -> None:
    tree = LiveTree()
    tree(RunStarted("r", 7, "agent", {"runs": 1}))
    live = tree._repr_mimebundle_()
    assert "0/7" in live["text/html"] and "running" in live["text/html"]
    assert live["text/plain"] == "convlab run: 0/7 instances"


def _listener_run(tree: LiveTree, n: int, failing_every: int = 50) -> None:
    """Feed the events of an n-instance run straight to the tree (no agent needed)."""
    tree(RunStarted("r", n, "agent", {"runs": 1}))
    for i in range(n):
        key = (f"case-{i}", "", 0, 0)
        tree(CaseStarted(key, f"case-{i}", "standard"))
        status = "failed" if i % failing_every == 0 else "passed"
        tree(CaseFinished(CaseResult(case_id=f"case-{i}", status=status, error="bad")))  # type: ignore[arg-type]
    tree(RunFinished(Run(id="r")))


def test_the_tree_is_capped_on_a_5000_instance_run() -> None:
    tree = LiveTree()
    _listener_run(tree, 5000)
    body = tree.body.value
    assert tree.bar.value == 5000
    shown = body.count("<details") + body.count("<div><span")
    assert shown <= tree.max_failed + tree.max_recent + tree.max_running
    assert len(body) < 60_000  # a page a person can read, not 5,000 rows
    assert "and 85 earlier" in body  # 100 failures, 15 shown
    assert "<b>100</b> failed" in tree.header.value
    assert "<b>4900</b> passed" in tree.header.value


def test_redraws_are_throttled_not_per_event() -> None:
    tree = LiveTree(interval=0.1)
    t0 = time.monotonic()
    _listener_run(tree, 3000)
    took = time.monotonic() - t0
    # one draw at construction, at most one per interval while running, one at the end
    assert tree.redraws <= 2 + int(took / tree.interval) + 1


def test_running_instances_are_shown_while_they_run() -> None:
    tree = LiveTree()
    tree(RunStarted("r", 3, "agent", {"runs": 1}))
    tree(CaseStarted(("slow", "", 0, 0), "slow", "standard"))
    tree._draw()
    assert "running (1)" in tree.body.value and "slow" in tree.body.value
    assert "<b>1</b> running" in tree.header.value
    tree.close(None)
    assert tree._final is not None and "without a result" in tree._final["text/plain"]


def test_stop_button_only_where_stopping_works() -> None:
    stopped: list[bool] = []
    tree = LiveTree()
    tree.bind_stop(lambda: stopped.append(True))
    assert tree.button.layout.display is None
    tree.button.click()
    assert stopped == [True] and tree.button.disabled
    blocking = LiveTree()
    blocking.bind_stop(None, "interrupt the kernel (■) to stop")
    assert blocking.button.layout.display == "none"
    assert "interrupt the kernel" in blocking.hint.value


def _slow_agent(messages: list[dict[str, Any]]) -> str:
    time.sleep(0.05)
    return "ok"


def _slow_suite(n: int) -> cl.Suite:
    return cl.Suite(
        id="slow",
        cases=[
            cl.Case(
                id=f"c{i}",
                input=[cl.Message(content="hi")],
                assertions=[{"kind": "contains", "value": "ok"}],
            )
            for i in range(n)
        ],
    )


def test_start_stop_button_ends_in_a_partial_run() -> None:
    tree = LiveTree()
    handle = cl.start(_slow_suite(200), _slow_agent, parallel=2, progress=tree)
    tree.bind_stop(handle.cancel)  # what convlab.start wires for its own tree
    deadline = time.monotonic() + 10
    while len(handle.results) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    partial = handle.results  # what a poll sees: the finished instances, as results
    assert len(partial) >= 4 and all(r.status == "passed" for r in partial)
    assert partial[0].turns[0].observation is not None and partial[0].case_id.startswith("c")
    tree.button.click()
    run = handle.wait(10)
    assert run.status == "cancelled"
    finished = {r.case_id: r for r in run.results if r.status == "passed"}
    assert all(finished[r.case_id] == r for r in partial)  # the same results, in full
    statuses = {r.status for r in run.results}
    assert "passed" in statuses and "cancelled" in statuses
    assert len(run.results) == 200
    assert handle.run is run


def test_arun_stop_button_cancels_and_returns_the_partial_run(monkeypatch: Any) -> None:
    import convlab.api as api

    trees: list[LiveTree] = []

    def fake_view(progress: Any) -> Any:
        tree = LiveTree()
        trees.append(tree)
        return api._View([tree], tree)

    monkeypatch.setattr(api, "_view", fake_view)

    async def go() -> Run:
        task = asyncio.ensure_future(cl.arun(_slow_suite(100), _slow_agent, parallel=2))
        while not trees or sum(trees[0].counts.values()) < 3:  # noqa: ASYNC110 - polls a thread
            await asyncio.sleep(0.02)
        trees[0].button.click()
        return await task

    run = asyncio.run(go())
    assert run.status == "cancelled"
    assert {r.status for r in run.results} >= {"passed", "cancelled"}


def test_progress_none_outside_a_kernel_is_text_on_stderr(capsys: Any) -> None:
    cl.run(EXPENSE, "demo:expense")
    out, err = capsys.readouterr()
    assert "Pass rate" in err and out == ""


def test_progress_rejects_unknown_values() -> None:
    with pytest.raises(ValueError, match="progress="):
        cl.run(EXPENSE, "demo:expense", progress="fancy")


def test_progress_widget_forced_outside_a_kernel_runs(capsys: Any) -> None:
    run = cl.run(EXPENSE, "demo:expense", progress="widget")
    assert run.summary["total"] == 12
    out, err = capsys.readouterr()
    assert out == "" and err == ""  # nothing to display outside IPython


def test_import_convlab_loads_no_ui_library() -> None:
    import subprocess

    code = (
        "import sys, convlab, convlab.api; bad = [m for m in ('plotly', 'ipywidgets',"
        " 'IPython', 'itables') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_glyph_the_views_show_is_in_a_text_font() -> None:
    """Each non-ASCII character the HTML views can show is drawn by a plain text font on this
    machine, not only by a colour emoji font: a page without an emoji font (most servers, many
    CI images) shows it, never an empty box. fontconfig (`fc-list`) says which fonts have it."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    from convlab.htmlkit import GLYPHS

    if shutil.which("fc-list") is None:
        pytest.fail("fc-list is missing: apt-get install fontconfig (chromium brings it)")
    views = Path(cl.__file__).parent
    sources = [*views.glob("notebook/*.py"), views / "report" / "html.py"]
    shown = set("".join(GLYPHS.values()))
    shown |= {c for p in sources for c in p.read_text(encoding="utf-8") if ord(c) > 127}
    shown -= {"ⓘ"}  # itables' own link glyph, which the exporter removes
    assert "◷" in shown and "⏱" not in shown
    missing = []
    for char in sorted(shown):
        fonts = subprocess.run(
            ["fc-list", f":charset={ord(char):x}", "color"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if not re.search(r"color=False", fonts):
            missing.append(f"{char} U+{ord(char):04X}")
    assert missing == [], f"only in emoji fonts (an empty box without one): {missing}"


def test_before_the_run_starts_the_tree_says_planning_not_0_of_0() -> None:
    tree = LiveTree()
    assert "planning…" in tree.header.value and "0/0" not in tree.header.value
    assert tree._repr_mimebundle_()["text/plain"] == "convlab run: planning…"
    tree._apply(RunStarted(run_id="r", total=12, agent="demo:expense"))  # no redraw thread
    tree._draw()
    assert "<b>0/12</b> instances" in tree.header.value and "planning" not in tree.header.value
