"""`cl.run` in a real kernel (jupyter_client + ipykernel): the live widget during the run, the
static summary after it, and an interrupt that returns the partial Run."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

SLOW_SUITE = """
import time
import convlab as cl

def slow(messages):
    time.sleep(0.05)
    return "ok"

suite = cl.Suite(id="slow", cases=[
    cl.Case(id=f"c{i}", input=[cl.Message(content="hi")],
            assertions=[{"kind": "contains", "value": "ok"}])
    for i in range(400)
])
"""


@pytest.fixture(scope="module")
def kernel() -> Iterator[tuple[Any, Any]]:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _execute(kc: Any, code: str, timeout: float = 60, on_msg: Any = None) -> list[dict[str, Any]]:
    """Run code; return every iopub message of that request up to its idle status."""
    msg_id = kc.execute(code)
    msgs: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Exception:  # queue.Empty: keep waiting until the deadline
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append(msg)
        if on_msg is not None:
            on_msg(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return msgs
    raise AssertionError(f"no idle status within {timeout}s; got {[m['msg_type'] for m in msgs]}")


def _errors(msgs: list[dict[str, Any]]) -> list[str]:
    return [
        f"{m['content']['ename']}: {m['content']['evalue']}"
        for m in msgs
        if m["msg_type"] == "error"
    ]


def _stdout(msgs: list[dict[str, Any]]) -> str:
    return "".join(
        m["content"]["text"]
        for m in msgs
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
    )


@pytest.mark.slow
def test_run_shows_the_widget_tree_then_the_static_summary(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    msgs = _execute(
        kc, 'import convlab as cl\nrun = cl.run("examples/expense", "demo:expense", runs=3)'
    )
    assert not _errors(msgs), _errors(msgs)
    kinds = [m["msg_type"] for m in msgs]
    opens = [m for m in msgs if m["msg_type"] == "comm_open"]
    assert any(m["content"]["target_name"] == "jupyter.widget" for m in opens)
    assert len(opens) < 40  # a handful of widgets (and their layouts/styles), not one per case
    shown = [m for m in msgs if m["msg_type"] == "display_data"]
    assert shown and WIDGET_VIEW in shown[0]["content"]["data"]
    assert "text/html" in shown[0]["content"]["data"]  # the static snapshot beside it
    display_id = shown[0]["content"]["transient"]["display_id"]
    updates = [m for m in msgs if m["msg_type"] == "update_display_data"]
    assert updates, kinds
    last = updates[-1]["content"]
    assert last["transient"]["display_id"] == display_id
    assert WIDGET_VIEW not in last["data"]
    assert "36 instances" in last["data"]["text/plain"]
    assert "<b>30</b> passed" in last["data"]["text/html"]
    # the widget was updated while the cell ran, before the static summary replaced it
    assert kinds.index("comm_msg") < kinds.index("update_display_data")
    assert not any(m["msg_type"] == "stream" and m["content"]["name"] == "stderr" for m in msgs)


@pytest.mark.slow
def test_interrupt_returns_the_partial_run(kernel: tuple[Any, Any]) -> None:
    km, kc = kernel
    assert not _errors(_execute(kc, SLOW_SUITE))
    interrupted: list[float] = []

    def interrupt() -> None:
        km.interrupt_kernel()
        interrupted.append(time.monotonic())

    timer = threading.Timer(1.5, interrupt)  # 400 cases x 50 ms / 2 in flight: ~10 s of work
    timer.start()
    msgs = _execute(kc, "run = cl.run(suite, slow, parallel=2)", timeout=60)
    timer.join()
    assert interrupted
    assert not _errors(msgs), _errors(msgs)  # the partial Run comes back, no traceback
    out = _stdout(
        _execute(
            kc,
            "print(type(run).__name__, run.status, sorted({r.status for r in run.results}),"
            " len(run.results))",
        )
    )
    # the remaining work was cancelled, not waited for: some instances are `cancelled`
    assert out.strip() == "Run cancelled ['cancelled', 'passed'] 400", out
    # the kernel is usable afterwards and nothing is still running in the background once
    # the run's history recording (written off the return path) is done
    out = _stdout(
        _execute(
            kc,
            "import threading, time; cl.history(limit=1); deadline = time.monotonic() + 10\n"
            "while time.monotonic() < deadline and any(t.name.startswith('convlab')"
            " for t in threading.enumerate()): time.sleep(0.05)\n"
            "print(sorted(t.name for t in threading.enumerate() if t.name.startswith('convlab')))",
        )
    )
    assert out.strip() == "[]", out


def _click_stop(kc: Any, msgs: list[dict[str, Any]]) -> None:
    """Click the tree's Stop button as a front end does: a comm message on the shell channel."""
    buttons = [
        m["content"]["comm_id"]
        for m in msgs
        if m["msg_type"] == "comm_open"
        and m["content"]["data"]["state"].get("_model_name") == "ButtonModel"
    ]
    assert len(buttons) == 1, "one Stop button"
    msg = kc.session.msg(
        "comm_msg",
        {"comm_id": buttons[0], "data": {"method": "custom", "content": {"event": "click"}}},
    )
    kc.shell_channel.send(msg)


@pytest.mark.slow
def test_stop_button_of_a_background_start_keeps_the_partial_run(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    assert not _errors(_execute(kc, SLOW_SUITE))
    msgs = _execute(kc, "handle = cl.start(suite, slow, parallel=2)")
    assert not _errors(msgs)
    assert any(WIDGET_VIEW in m["content"].get("data", {}) for m in msgs)
    time.sleep(1.0)
    _click_stop(kc, msgs)
    out = _stdout(
        _execute(
            kc,
            "run = handle.wait(20)\nprint(run.status, sorted({r.status for r in run.results}),"
            " len(run.results))",
        )
    )
    assert out.strip() == "cancelled ['cancelled', 'passed'] 400", out


@pytest.mark.slow
def test_stop_button_of_an_awaited_arun_returns_the_partial_run(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    assert not _errors(_execute(kc, SLOW_SUITE))
    seen: list[dict[str, Any]] = []
    clicked: list[bool] = []

    first: list[float] = []

    def click_once_shown(msg: dict[str, Any]) -> None:
        seen.append(msg)
        comm_msgs = sum(m["msg_type"] == "comm_msg" for m in seen)
        if comm_msgs and not first:
            first.append(time.monotonic())
        # the run is going and the tree redrawing, and (as a reader would wait) some of the
        # ~10 s of work done: the tree's own widgets send messages before any instance ends
        going = comm_msgs >= 5 and time.monotonic() - first[0] > 1.0 if first else False
        if not clicked and going:
            _click_stop(kc, seen)
            clicked.append(True)

    msgs = _execute(
        kc, "run = await cl.arun(suite, slow, parallel=2)", timeout=60, on_msg=click_once_shown
    )
    assert clicked and not _errors(msgs)
    # stopped, not run to its end: the instances not yet finished are `cancelled`
    out = _stdout(_execute(kc, "print(run.status, sorted({r.status for r in run.results}))"))
    assert out.strip() == "cancelled ['cancelled', 'passed']", out


@pytest.mark.slow
def test_text_progress_in_a_kernel_is_not_an_error_block(kernel: tuple[Any, Any]) -> None:
    _, kc = kernel
    msgs = _execute(kc, 'run = cl.run("examples/expense", "demo:expense", progress="text")')
    assert not _errors(msgs)
    streams = [m["content"] for m in msgs if m["msg_type"] == "stream"]
    assert streams and all(s["name"] == "stdout" for s in streams)  # stderr is drawn pink
    text = "".join(s["text"] for s in streams)
    assert "expense-policy-limit" in text and "Pass rate" in text
    assert not any(m["msg_type"] == "comm_open" for m in msgs)  # no widget when told "text"


def _cell_outputs(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the cell keeps once it has run: each display replaced by its latest update."""
    kept: list[dict[str, Any]] = []
    for m in msgs:
        content = m["content"]
        if m["msg_type"] in ("display_data", "execute_result"):
            kept.append(dict(content))
        elif m["msg_type"] == "update_display_data":
            for out in kept:
                if out.get("transient", {}).get("display_id") == content["transient"]["display_id"]:
                    out["data"] = content["data"]
    return kept


@pytest.mark.slow
@pytest.mark.parametrize(
    "cell",
    [
        'r = cl.run("examples/expense", "demo:expense", runs=2)\nr',
        "%convlab run -i examples/expense -n demo:expense --runs 2",
        'e = cl.run("examples/expense", {"a": "demo:expense", "b": "demo:expense_lite"})\ne',
    ],
)
def test_a_cell_that_runs_and_shows_its_result_shows_the_card_once(
    kernel: tuple[Any, Any], cell: str
) -> None:
    _, kc = kernel
    msgs = _execute(kc, "import convlab as cl\n%load_ext convlab\n" + cell, timeout=120)
    assert not _errors(msgs), _errors(msgs)
    outputs = _cell_outputs(msgs)
    cards = sum(str(o["data"].get("text/html", "")).count("class='cl-card'") for o in outputs)
    assert cards == 1, [o["data"].get("text/plain") for o in outputs]
    assert "class='cl-card'" in outputs[-1]["data"]["text/html"]  # the displayed result's
    assert "did not pass (" in "".join(str(o["data"].get("text/html", "")) for o in outputs)
    # a result shown in a later cell leaves the cell that ran it as it was
    later = _execute(kc, cell.split("\n")[-1] if "\n" in cell else "_")
    assert sum("class='cl-card'" in str(o["data"].get("text/html")) for o in _cell_outputs(later))


@pytest.mark.slow
def test_under_a_jupyter_server_a_chart_carries_no_html_copy() -> None:
    """JupyterLab draws the Plotly mimetype and saves a PNG of the chart: a `text/html` copy
    would only make the saved notebook bigger. nbclient (no Jupyter server) keeps the copy,
    which `convlab report` shows with plotly.js loaded once."""
    from jupyter_client.manager import start_new_kernel

    code = (
        "import convlab as cl\n"
        'run = cl.run("examples/expense", "demo:expense", progress=False)\n'
        "run.plot.pass_rates()"
    )
    seen = {}
    for where, extra in (("lab", {"JPY_SESSION_NAME": "quickstart.ipynb"}), ("nbclient", {})):
        env = {k: v for k, v in os.environ.items() if k not in ("JPY_SESSION_NAME", "VSCODE_PID")}
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT), env={**env, **extra})
        try:
            msgs = _execute(kc, code)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        assert not _errors(msgs), _errors(msgs)
        (shown,) = [m["content"]["data"] for m in msgs if m["msg_type"] == "execute_result"]
        seen[where] = set(shown)
    plotly = "application/vnd.plotly.v1+json"
    assert seen["lab"] == {plotly, "text/plain"}
    assert seen["nbclient"] == {plotly, "text/html", "text/plain"}


@pytest.mark.slow
def test_a_live_tree_that_carries_the_stylesheet_hands_it_to_what_replaces_it() -> None:
    """The first convlab view of a session carries the page's stylesheet; when that view is a
    run's live tree, the card (or the folded tree) that replaces it keeps it, or every later
    view of the notebook would lose its styles."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        ran = _execute(kc, 'import convlab as cl\nr = cl.run("examples/expense", "demo:expense")')
        both = _execute(kc, 'r2 = cl.run("examples/expense", "demo:expense")\nr2')
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not _errors(ran) and not _errors(both)
    kept = [str(o["data"].get("text/html", "")) for o in _cell_outputs(ran)]
    assert sum(h.count("data-convlab-style") for h in kept) == 1, kept
    later = [str(o["data"].get("text/html", "")) for o in _cell_outputs(both)]
    assert not any("data-convlab-style" in h for h in later)  # one per page
