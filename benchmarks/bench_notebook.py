"""What the live widget tree costs: run time with the widget vs `progress=False`, and the
number of widget messages it sends.

Run from the project root:
    python benchmarks/bench_notebook.py [--n 2000] [--repeat 3] [--size-only]
Prints figures and ratios measured in the same run (no pass/fail).

(a) in a real kernel (jupyter_client + ipykernel, as a notebook runs it): 2,000 single-turn
    instances, 3 assertions each, against an async agent that answers after 5 ms, 50 in
    flight; `cl.run` with the widget tree (progress=None picks it in a kernel) vs
    progress=False; every iopub `comm_msg` is counted (target: at most 10% slower; messages
    bounded by time, not by instances).
(b) in-process, no kernel, an agent that answers at once (the worst case for overhead): the
    tree's listener cost per event and its redraws.
(c) the executed notebooks/quickstart.ipynb's size in bytes: saved as `convlab report` saves
    it, and as plain nbclient stores it (with every widget model ever made); how many table
    outputs it has and how many carry the DataTables bundle (target: under 350 KB).
(d) the same notebook as a user saves it from JupyterLab: a real JupyterLab on 127.0.0.1
    driven by headless chromium (as tests/test_jupyterlab.py drives it) runs it with Run All,
    scrolls through it (JupyterLab's Plotly renderer stores a PNG of each chart it draws) and
    saves it with Ctrl+S; the bytes on disk, by mimetype. `--lab` runs (d) alone.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import asyncio, time
import convlab as cl
from convlab.model import Case, Message, Suite

async def agent(messages):
    await asyncio.sleep(0.005)
    return "ok"

specs = [{"kind": "contains", "value": "ok"}, {"kind": "regex", "pattern": r"\\w+"},
         {"kind": "not_contains", "value": "error"}]
suite = Suite(id="bench", cases=[Case(id=f"c{i}", input=[Message(content=f"m {i}")],
              assertions=specs) for i in range({n})])
"""

TIMED = """
import gc
run = None
gc.collect()  # both modes start from the same heap
{gc_off}
t0 = time.perf_counter()
run = cl.run(suite, agent, parallel=50, progress={progress})
took = time.perf_counter() - t0
passed = run.summary["passed"]  # the figures a reader looks at next (the tree showed them)
to_summary = time.perf_counter() - t0
gc.enable()
print("SECONDS", took, to_summary, passed)
"""


def _execute(kc: Any, code: str, timeout: float = 600) -> list[dict[str, Any]]:
    msg_id = kc.execute(code)
    msgs: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Exception:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append(msg)
        if msg["msg_type"] == "error":
            raise RuntimeError(msg["content"]["evalue"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return msgs
    raise TimeoutError(code)


def _seconds(msgs: list[dict[str, Any]], field: int = 1) -> float:
    """The run's seconds (field 1), or until its summary was at hand (field 2)."""
    for m in msgs:
        if m["msg_type"] == "stream" and "SECONDS" in m["content"]["text"]:
            return float(m["content"]["text"].split()[field])
    raise RuntimeError("no timing printed")


def in_kernel(n: int, repeat: int) -> None:
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    try:
        _execute(kc, SETUP.replace("{n}", str(n)))
        for warm in ("False", "None"):  # warm-up: imports (ipywidgets, pandas), first loop
            _execute(kc, TIMED.format(progress=warm, gc_off=""))
        plain, widget, messages, comm_msgs = [], [], [], []
        plain_nogc, widget_nogc, plain_sum, widget_sum = [], [], [], []
        for _ in range(repeat):
            msgs = _execute(kc, TIMED.format(progress="False", gc_off=""))
            plain.append(_seconds(msgs))
            plain_sum.append(_seconds(msgs, 2))
            msgs = _execute(kc, TIMED.format(progress="None", gc_off=""))
            widget.append(_seconds(msgs))
            widget_sum.append(_seconds(msgs, 2))
            messages.append(len(msgs))
            comm_msgs.append(sum(m["msg_type"] == "comm_msg" for m in msgs))
            off = "gc.disable()"
            plain_nogc.append(_seconds(_execute(kc, TIMED.format(progress="False", gc_off=off))))
            widget_nogc.append(_seconds(_execute(kc, TIMED.format(progress="None", gc_off=off))))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    p, w = statistics.median(plain), statistics.median(widget)
    c = statistics.median(comm_msgs)
    print(f"(a) kernel, {n} instances x 3 assertions, 5 ms agent, parallel=50, median of {repeat}")
    print(f"    progress=False      {p:6.2f} s   ({n / p:,.0f} instances/s)")
    print(f"    live widget tree    {w:6.2f} s   ({n / w:,.0f} instances/s)")
    print(f"    widget / plain      {w / p:6.3f}x  (target <= 1.10x)")
    ps, ws = statistics.median(plain_sum), statistics.median(widget_sum)
    print(f"    ... until run.summary is at hand: {ps:.2f} s vs {ws:.2f} s = {ws / ps:.3f}x")
    pn, wn = statistics.median(plain_nogc), statistics.median(widget_nogc)
    print(
        f"    with the collector off in both (the tree's own cost, no gen-2 pauses): "
        f"{pn:.2f} s vs {wn:.2f} s = {wn / pn:.3f}x"
    )
    print(
        f"    widget comm_msgs    {c:6.0f}     ({c / w:.1f}/s over the run; "
        f"{c / n:.3f} per instance; jupyter_server drops above 1000/s)"
    )
    print(f"    iopub msgs (cell)   {statistics.median(messages):6.0f}")


def in_process(n: int) -> None:
    import ipywidgets

    import convlab as cl
    from convlab.notebook.progress import LiveTree

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_engine import _suite

    async def agent(messages: Any) -> str:
        return "ok"

    suite = _suite(n)
    sent = 0
    original = ipywidgets.Widget._send

    def counting(self: Any, msg: Any, buffers: Any = None) -> None:
        nonlocal sent
        sent += 1
        original(self, msg, buffers)

    ipywidgets.Widget._send = counting  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        cl.run(suite, agent, parallel=16, progress=False)
        plain = time.perf_counter() - t0
        tree = LiveTree()
        sent = 0
        t0 = time.perf_counter()
        cl.run(suite, agent, parallel=16, progress=tree)
        live = time.perf_counter() - t0
    finally:
        ipywidgets.Widget._send = original  # type: ignore[method-assign]
    print(f"(b) in-process, {n} instances, agent answers at once (worst case for overhead)")
    print(f"    progress=False {plain:6.2f} s   tree {live:6.2f} s   ratio {live / plain:.3f}x")
    print(
        f"    redraws {tree.redraws} ({tree.redraws / live:.1f}/s), widget sends {sent} "
        f"(no kernel: counted at Widget._send)"
    )


def quickstart_size() -> None:
    import nbformat
    from nbclient import NotebookClient

    from convlab.report.notebook import execute_notebook

    path = ROOT / "notebooks" / "quickstart.ipynb"
    executed = execute_notebook(path)
    report = nbformat.writes(executed) + "\n"
    pages = "".join(
        str(out.get("data", {}).get("text/html", ""))
        for cell in executed.cells
        for out in cell.get("outputs", [])
    )
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    plain = nbformat.writes(nb) + "\n"
    print("(c) executed notebooks/quickstart.ipynb")
    loaders = re.findall(r"<script data-convlab-bundle.*?</script>", pages, re.DOTALL)
    bundle = sum(len(loader.encode()) for loader in loaders)
    print(f"    as convlab report saves it   {len(report.encode()):>9,} bytes  (target < 350,000)")
    print(f"    of which the table script    {bundle:>9,} bytes  (once)")
    print(f"    as nbclient stores it        {len(plain.encode()):>9,} bytes  (all widget state)")
    tables = report.count("new ITable(")
    print(f"    table outputs {tables}, carrying the bundle {report.count('data-convlab-bundle')}")


def saved_from_jupyterlab() -> None:
    import json
    import shutil
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from offline_browser import launched
    from test_jupyterlab import WAIT, Lab, _run_all

    tmp = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    root = tmp / "root"
    shutil.copytree(ROOT / "examples" / "expense", root / "examples" / "expense")
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".*"))
    lab = Lab(root, tmp / "home")
    try:
        with launched() as browser:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(WAIT)
            page.goto(f"{lab.url}/lab/tree/notebooks/quickstart.ipynb?token={lab.token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            lab.wait_kernel_idle(page)
            page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for()
            _run_all(page)
            page.wait_for_timeout(3000)
            lab.wait_kernel_idle(page)
            for _ in range(40):  # a reader scrolls through: every chart is drawn
                page.mouse.wheel(0, 1500)
                page.wait_for_timeout(150)
            page.wait_for_timeout(2000)
            page.keyboard.press("Control+s")
            page.wait_for_timeout(3000)
            context.close()
    finally:
        lab.stop()
    saved = root / "notebooks" / "quickstart.ipynb"
    nb = json.loads(saved.read_text(encoding="utf-8"))
    by_mime: dict[str, int] = {}
    charts = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            charts += "application/vnd.plotly.v1+json" in out.get("data", {})
            for mime, value in out.get("data", {}).items():
                text = "".join(value) if isinstance(value, list) else json.dumps(value)
                by_mime[mime] = by_mime.get(mime, 0) + len(text.encode())
    print("(d) notebooks/quickstart.ipynb run and saved in JupyterLab")
    print(f"    saved                        {saved.stat().st_size:>9,} bytes  ({charts} charts)")
    for mime, size in sorted(by_mime.items(), key=lambda kv: -kv[1]):
        print(f"    {mime:<28} {size:>9,} bytes")
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size-only", action="store_true", help="only (c), the notebook's size")
    ap.add_argument("--lab", action="store_true", help="only (d), saved from JupyterLab")
    args = ap.parse_args()
    if args.lab:
        saved_from_jupyterlab()
        return
    if not args.size_only:
        in_kernel(args.n, args.repeat)
        in_process(args.n)
    quickstart_size()
    saved_from_jupyterlab()


if __name__ == "__main__":
    main()
