"""Engine benchmark: per-case cost in process, HTTP through convlab.run, memory.

Run from the project root:  python benchmarks/bench_engine.py [--quick] [--only a,b,c]
Prints figures and ratios against baselines measured in the same run (no pass/fail): the
machine's load moves the absolute figures, the ratios much less.

(a) in process: N single-turn cases, 3 assertions each (contains, regex, not_contains), the
    results store on, an async and a sync function agent that answer at once -> cases/s
    (targets: >= 10,000/s async, >= 5,000/s sync), side by side with the ideal: a plain
    asyncio loop, same concurrency, that calls the agent, makes the 3 checks and writes the
    same kind of JSONL line per case; the ratio convlab/ideal is printed.
(b) HTTP: N=1000 single-turn cases at 50 in flight through convlab.run with assertions
    against benchmarks/support/mock_openai.py at 50 ms latency, side by side with the raw
    aiohttp baseline (benchmarks/support/anchor_ideal.py); benchmarks/bench_http.py has more.
(c) memory, a stability run of 100,000 stored results (10,000 cases x runs=10; fresh
    processes): resident growth per result of the run that holds them (target <= 1 KB),
    the store line of a passed single-turn case (target <= 500 B), and reading the store
    back (target <= 1 s) with its resident growth.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent / "support"


def _suite(n: int, expect: str = "ok"):
    """n single-turn cases, 3 assertions each, that pass when the reply contains `expect`."""
    from convlab.model import Case, Message, Suite

    specs = [
        {"kind": "contains", "value": expect},
        {"kind": "regex", "pattern": r"\w+"},
        {"kind": "not_contains", "value": "error"},
    ]
    return Suite(
        id="bench",
        cases=[
            Case(id=f"c{i}", input=[Message(content=f"message {i}")], assertions=specs)
            for i in range(n)
        ],
    )


def _ideal(n: int, parallel: int, path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        asyncio.run(_ideal_loop(n, parallel, fh))


async def _ideal_loop(n: int, parallel: int, fh: Any) -> None:
    """The floor: call the agent, make the three checks, write a JSONL line per case."""

    async def agent(messages: list[dict[str, str]]) -> str:
        return "ok"

    pattern = re.compile(r"\w+")
    todo = iter(range(n))

    async def worker() -> None:
        for i in todo:
            t0 = time.perf_counter()
            reply = await agent([{"role": "user", "content": f"message {i}"}])
            checks = [
                {"kind": "contains", "passed": "ok" in reply},
                {"kind": "regex", "passed": pattern.search(reply) is not None},
                {"kind": "not_contains", "passed": "error" not in reply},
            ]
            status = "passed" if all(c["passed"] for c in checks) else "failed"
            ms = (time.perf_counter() - t0) * 1000
            line = {"case_id": f"c{i}", "status": status, "reply": reply, "checks": checks}
            fh.write(json.dumps({**line, "duration_ms": ms}) + "\n")
            fh.flush()

    await asyncio.gather(*(worker() for _ in range(parallel)))


def _rate(fn, n: int, repeat: int) -> float:
    """Median cases/s over `repeat` runs of fn()."""
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def in_process(n: int, repeat: int) -> None:
    import convlab as cl

    async def async_agent(messages):
        return "ok"

    def sync_agent(messages):
        return "ok"

    suite = _suite(n)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.jsonl"
        cl.run(_suite(200), async_agent, parallel=16, store=store, progress=False)  # warm-up
        ideal = _rate(lambda: _ideal(n, 16, Path(tmp) / "i.jsonl"), n, repeat)

        def one(agent):
            run = cl.run(suite, agent, parallel=16, store=store, progress=False)
            assert run.summary["passed"] == n, run.summary

        rate_async = _rate(lambda: one(async_agent), n, repeat)
        rate_sync = _rate(lambda: one(sync_agent), n, repeat)
    print(f"(a) in process: {n:,} cases x 3 assertions, store on, parallel=16 (median of {repeat})")
    print(f"    ideal (plain asyncio loop writing JSONL): {ideal:,.0f} cases/s")
    for name, rate, target in (("async", rate_async, 10_000), ("sync", rate_sync, 5_000)):
        print(
            f"    convlab, {name} function agent: {rate:,.0f} cases/s = {ideal / rate:.1f}x the "
            f"ideal's time per case; target >= {target:,}/s -> {rate / target:.2f}x target"
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int, timeout: float = 20) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("mock server did not start")


def http(n: int, conc: int, latency_ms: int) -> None:
    import convlab as cl

    mock = BENCH / "mock_openai.py"
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(mock), "--port", str(port), "--latency-ms", str(latency_ms)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        ideal = n * latency_ms / 1000 / conc
        anchor = BENCH / "anchor_ideal.py"
        base = subprocess.run(
            [sys.executable, str(anchor), "--client", "aiohttp", "--base-url",
             f"http://127.0.0.1:{port}/v1", "-n", str(n), "-c", str(conc)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        base_s = _seconds_from(base.stdout)
        agent = cl.agents.openai("mock", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
        suite = _suite(n, expect="You said: ")  # the mock echoes the message
        t0 = time.perf_counter()
        run = cl.run(suite, agent, parallel=conc, progress=False)
        dt = time.perf_counter() - t0
        ok = run.summary["passed"]
        print(f"(b) http: N={n} C={conc} latency={latency_ms} ms, ideal {ideal:.2f} s")
        if base_s:
            print(f"    raw aiohttp baseline: {base_s:.2f} s = {base_s / ideal:.2f}x ideal")
        print(
            f"    convlab.run + 3 assertions: {dt:.2f} s = {dt / ideal:.2f}x ideal"
            + (f", {dt / base_s:.2f}x baseline (target <= 1.05x)" if base_s else "")
            + f" ({ok}/{n} passed)"
        )
    finally:
        server.terminate()
        server.wait()


def _seconds_from(text: str) -> float | None:
    for line in reversed(text.splitlines()):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "wall_s" in rec:
            return float(rec["wall_s"])
    m = re.findall(r"(\d+\.\d+)\s*s\b", text)
    return float(m[-1]) if m else None


_RSS = """
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * __import__("os").sysconf("SC_PAGE_SIZE")
"""


def memory(n: int) -> None:
    """Resident growth of a run holding n results and of reading its store back (fresh
    processes each, so neither pays for the other), and the store's line size."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.jsonl"
        write = f"""{_RSS}
import gc, sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
import convlab as cl
from bench_engine import _suite
async def agent(messages):
    return "ok"
suite = _suite({n // 10})
cl.run(_suite(100), agent, progress=False)  # imports and first-use caches
gc.collect(); before = rss()
t0 = time.perf_counter()
run = cl.run(suite, agent, runs=10, parallel=16, store={str(store)!r}, progress=False)
dt = time.perf_counter() - t0
gc.collect(); grown = rss() - before
print(f"(c) memory: a stability run of {{len(run.results):,}} results "
      f"({n // 10:,} cases x runs=10), store on: {{dt:.1f}} s; resident "
      f"growth {{grown / len(run.results):,.0f}} B per result (target <= 1,024 B)")
"""
        read = f"""{_RSS}
import gc, time
from convlab.engine.store import read_store
import convlab
gc.collect(); before = rss()
t0 = time.perf_counter()
header, results = read_store({str(store)!r})
dt = time.perf_counter() - t0
del header  # the suite it holds is the cases', not the results'
gc.collect(); grown = rss() - before
t1 = time.perf_counter()
run = convlab.load_run({str(store)!r})
df = run.df
dt2 = time.perf_counter() - t1
print(f"    reading the {{len(results):,}} stored results back: {{dt:.2f}} s (target <= 1 s), "
      f"resident growth {{grown / len(results):,.0f}} B per result; load_run + Run.df "
      f"{{dt2:.2f}} s")
"""
        env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(ROOT)}
        subprocess.run([sys.executable, "-c", write], check=True, env=env)
        lines = store.read_bytes().splitlines()[1:]
        passed = [len(x) + 1 for x in lines if b'"status":"passed"' in x]
        print(
            f"    store: {store.stat().st_size / 1e6:.0f} MB; a passed single-turn case's line "
            f"{statistics.median(passed):.0f} B (target <= 500 B)"
        )
        subprocess.run([sys.executable, "-c", read], check=True, env=env)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    ap.add_argument("--only", default="a,b,c", help="which parts: a (in process), b, c")
    args = ap.parse_args()
    os.chdir(ROOT)
    parts = set(args.only.split(","))
    if "a" in parts:
        in_process(2000 if args.quick else 10_000, 1 if args.quick else 3)
    if "b" in parts:
        http(200 if args.quick else 1000, 50, 50)
    if "c" in parts:
        memory(10_000 if args.quick else 100_000)


if __name__ == "__main__":
    main()
