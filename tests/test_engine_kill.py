"""A run killed with SIGKILL loses nothing that finished; resume completes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

import convlab as cl

SCRIPT = textwrap.dedent("""
    import asyncio, sys
    import convlab as cl
    from convlab.model import Case, Message, Suite

    HELD = 20  # cases from m20 on never answer in the killed run

    SUITE = Suite(id="kill", cases=[
        Case(id=f"c{i:02d}", input=[Message(content=f"m{i}")],
             assertions=[{"kind": "contains", "value": "ok"}])
        for i in range(40)
    ])

    def make_agent(calls_path, hold_from=None):
        async def agent(messages):
            text = messages[-1]["content"]
            with open(calls_path, "a") as fh:
                fh.write(text + "\\n")
            if hold_from is not None and int(text[1:]) >= hold_from:
                await asyncio.sleep(3600)  # held until the process is killed
            return "ok"
        return agent

    if __name__ == "__main__":
        agent = make_agent(sys.argv[2], hold_from=HELD)
        cl.run(SUITE, agent, parallel=4, store=sys.argv[1], progress=False)
""")


GUARD_S = 60.0
"""How long a test waits for a state the child process reaches by itself."""


def wait_for(reached: Callable[[], bool]) -> bool:
    """Poll for a state that, once reached, stays (no timing window): True when reached."""
    deadline = time.monotonic() + GUARD_S
    while not reached():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_sigkill_then_resume(tmp_path):
    script = tmp_path / "killme.py"
    script.write_text(SCRIPT)
    store, calls = tmp_path / "store.jsonl", tmp_path / "calls.txt"
    proc = subprocess.Popen([sys.executable, str(script), str(store), str(calls)])
    # The run settles with m0-m19 stored and m20-m23 held (parallel=4): kill it there.
    try:
        held = wait_for(lambda: calls.exists() and len(calls.read_text().split()) >= 24)
        assert held, "the killed run never reached its held cases"
        assert wait_for(lambda: store.read_text().count('"type":"result"') == 20)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    lines = store.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line parses
    stored = {r["case_id"] for r in records if r.get("type") == "result"}
    assert stored == {f"c{i:02d}" for i in range(20)}
    assert sorted(calls.read_text().split()) == sorted(f"m{i}" for i in range(24))

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
        if messages[-1]["content"] == "m4":
            await asyncio.sleep(3600)  # held until Ctrl-C
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
    # parallel=1: m0-m3 answer, m4 is held; the fifth call means Ctrl-C lands on m4.
    try:
        assert wait_for(lambda: calls.exists() and calls.read_text().count("x") >= 5)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=GUARD_S)
    finally:
        proc.kill()
    assert out.split() == ["cancelled", "4", "36"]
