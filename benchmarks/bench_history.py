"""History benchmark: what recording a run in the history costs the user, with history on
(the default).

Run from the project root:

    python benchmarks/bench_history.py [--quick] [--before DIR]

`--before DIR` measures the convlab tree in DIR too (a checkout of an earlier commit:
`git worktree add DIR REV`), in the same run, each figure printed beside this tree's. Every
figure comes from a fresh process whose `convlab` is the tree measured, with its own
CONVLAB_HOME (a temporary folder: the user's history gets no benchmark runs).

(a) memory: async single-turn cases with 3 checks and a results store, 5,000 and 25,000 of
    them, each in its own process, sampling the resident memory every 2 ms from just before
    `cl.run` until the run's history row is in the database: the peak growth per result (the
    difference of the two peaks over the difference of the result counts; target <= 1 KB),
    and what stays held per result once the row is in and the garbage is collected, with the
    Run still referenced (target <= 1 KB).
(b) return: 20,000 single-turn instances with text progress (to a pipe) and history on: the
    time from the last instance's result (its `CaseFinished` event) to `cl.run` returning
    (target <= 100 ms), and the whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

_COMMON = """
import gc, os, sqlite3, threading, time
from convlab.model import Case, Message, Suite

def suite(n):
    specs = [
        {"kind": "contains", "value": "ok"},
        {"kind": "regex", "pattern": r"\\w+"},
        {"kind": "not_contains", "value": "error"},
    ]
    return Suite(id="bench", cases=[
        Case(id=f"c{i}", input=[Message(content=f"message {i}")], assertions=specs)
        for i in range(n)
    ])

async def agent(messages):
    return "ok"

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def recorded(run_id):
    db = os.path.join(os.environ["CONVLAB_HOME"], "history.db")
    if not os.path.exists(db):
        return False
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()
"""

_MEMORY = """
import convlab as cl
cl.run(suite(100), agent, progress=False)  # imports and first-use caches
the_suite = suite({cases})
gc.collect()
base = rss()
peak = [base]
going = [True]

def sample():
    while going[0]:
        peak[0] = max(peak[0], rss())
        time.sleep(0.002)

sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
run = cl.run(the_suite, agent, parallel=16, store={store!r}, progress=False)
deadline = time.monotonic() + 120
while not recorded(run.id) and time.monotonic() < deadline:
    time.sleep(0.01)
going[0] = False
sampler.join()
gc.collect()
print(json.dumps({{"n": len(run.results), "peak": peak[0] - base, "held": rss() - base,
                   "recorded": recorded(run.id)}}))
"""

_RETURN = """
import convlab as cl
from convlab.engine.runner import Runner
cl.run(suite(100), agent, progress=False)  # imports and first-use caches
last = [0.0]
emit = Runner.emit

def timed(self, event):
    emit(self, event)
    if type(event).__name__ == "CaseFinished":
        last[0] = time.perf_counter()

Runner.emit = timed
the_suite = suite({cases})
t0 = time.perf_counter()
run = cl.run(the_suite, agent, parallel=16, progress="text")
end = time.perf_counter()
deadline = time.monotonic() + 120
while not recorded(run.id) and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({{"n": len(run.results), "after_last_s": end - last[0], "run_s": end - t0,
                   "recorded": recorded(run.id)}}))
"""


def _child(code: str, tree: Path, home: Path) -> dict[str, Any]:
    """Run `code` in a fresh process whose `convlab` is the one in `tree`; its JSON line."""
    env = {**os.environ, "PYTHONPATH": str(tree), "CONVLAB_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", "import json\n" + _COMMON + code],
        check=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the text progress
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    ).stdout
    figures: dict[str, Any] = json.loads(out.splitlines()[-1])
    return figures


def memory(tree: Path, sizes: tuple[int, int]) -> dict[str, float]:
    """Peak and held growth per result, from a small and a big run in separate processes."""
    with tempfile.TemporaryDirectory() as tmp:
        small, big = (
            _child(
                _MEMORY.format(cases=n, store=str(Path(tmp) / f"s{n}.jsonl")),
                tree,
                Path(tmp) / f"home{n}",
            )
            for n in sizes
        )
    assert small["recorded"] and big["recorded"], (small, big)
    dn = big["n"] - small["n"]
    return {
        "peak_per_result": (big["peak"] - small["peak"]) / dn,
        "held_per_result": (big["held"] - small["held"]) / dn,
    }


def returning(tree: Path, n: int) -> dict[str, float]:
    """The time from the last result to `cl.run` returning, with text progress."""
    with tempfile.TemporaryDirectory() as tmp:
        out = _child(_RETURN.format(cases=n), tree, Path(tmp) / "home")
    assert out["recorded"], out
    return {"after_last_ms": out["after_last_s"] * 1000, "run_s": out["run_s"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    ap.add_argument("--before", type=Path, help="also measure the convlab tree in this folder")
    ap.add_argument("--repeat", type=int, default=1, help="measure each figure this many times")
    args = ap.parse_args()
    sizes = (1_000, 5_000) if args.quick else (5_000, 25_000)
    n = 4_000 if args.quick else 20_000
    trees = {"this tree": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.repeat):
        for name, tree in trees.items():  # alternating: the machine's load hits both
            figures[name].append(memory(tree, sizes) | returning(tree, n))

    def shown(key: str, fmt: str) -> str:
        parts = []
        for name, runs in figures.items():
            values = ", ".join(format(r[key], fmt) for r in runs)
            parts.append(f"{name} {values}")
        return "; ".join(parts)

    print(f"(a) memory, history on, {sizes[0]:,} vs {sizes[1]:,} async single-turn cases with "
          "3 checks and a store, separate processes")  # fmt: skip
    print(f"    peak growth per result: {shown('peak_per_result', ',.0f')} B (target <= 1,024)")
    print(f"    held after the run, per result: {shown('held_per_result', ',.0f')} B "
          "(target <= 1,024)")  # fmt: skip
    print(f"(b) {n:,} instances, history on, text progress")
    print(f"    last result -> cl.run returns: {shown('after_last_ms', ',.0f')} ms "
          "(target <= 100)")  # fmt: skip
    print(f"    whole run: {shown('run_s', '.2f')} s")


if __name__ == "__main__":
    main()
