"""A run killed with SIGKILL loses nothing that finished; resume completes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import convlab as cl

SCRIPT = textwrap.dedent("""
    import asyncio, sys
    import convlab as cl
    from convlab.model import Case, Message, Suite

    SUITE = Suite(id="kill", cases=[
        Case(id=f"c{i:02d}", input=[Message(content=f"m{i}")],
             assertions=[{"kind": "contains", "value": "ok"}])
        for i in range(40)
    ])

    def make_agent(calls_path):
        async def agent(messages):
            with open(calls_path, "a") as fh:
                fh.write(messages[-1]["content"] + "\\n")
            await asyncio.sleep(0.05)
            return "ok"
        return agent

    if __name__ == "__main__":
        cl.run(SUITE, make_agent(sys.argv[2]), parallel=4, store=sys.argv[1], progress=False)
""")


def test_sigkill_then_resume(tmp_path):
    script = tmp_path / "killme.py"
    script.write_text(SCRIPT)
    store, calls = tmp_path / "store.jsonl", tmp_path / "calls.txt"
    proc = subprocess.Popen([sys.executable, str(script), str(store), str(calls)])
    deadline = time.time() + 30
    while time.time() < deadline:
        if store.exists() and store.read_text().count('"type":"result"') >= 10:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    lines = store.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line parses
    stored = {r["case_id"] for r in records if r.get("type") == "result"}
    assert 10 <= len(stored) < 40

    sys.path.insert(0, str(tmp_path))
    try:
        import killme
    finally:
        sys.path.remove(str(tmp_path))
    calls.write_text("")
    run = cl.run(
        killme.SUITE,
        killme.make_agent(str(calls)),
        parallel=4,
        store=store,
        resume=True,
        progress=False,
    )
    again = calls.read_text().split()
    assert len(run.results) == 40 and all(r.status == "passed" for r in run.results)
    assert not {f"m{int(c[1:])}" for c in stored} & set(again)  # nothing stored ran twice
    assert len(again) == 40 - len(stored)


INTERRUPT = textwrap.dedent("""
    import asyncio, sys
    import convlab as cl
    from convlab.model import Case, Message, Suite

    async def agent(messages):
        with open(sys.argv[1], "a") as fh:
            fh.write("x\\n")
        await asyncio.sleep(0.05 if messages[-1]["content"] != "m39" else 60)
        return "ok"

    suite = Suite(id="int", cases=[Case(id=f"c{i:02d}", input=[Message(content=f"m{i}")])
                                   for i in range(40)])
    run = cl.run(suite, agent, parallel=1, progress=False)
    counts = {}
    for r in run.results:
        counts[r.status] = counts.get(r.status, 0) + 1
    print(run.status, counts.get("passed", 0), counts.get("cancelled", 0), flush=True)
""")


def test_ctrl_c_keeps_finished_results_and_cancels_the_rest(tmp_path):
    script = tmp_path / "interrupt.py"
    script.write_text(INTERRUPT)
    calls = tmp_path / "calls.txt"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(calls)], stdout=subprocess.PIPE, text=True
    )
    deadline = time.time() + 60
    while time.time() < deadline and (not calls.exists() or calls.read_text().count("x") < 4):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    status, passed, cancelled = out.split()
    assert status == "cancelled"
    assert int(passed) >= 1 and int(passed) + int(cancelled) == 40
