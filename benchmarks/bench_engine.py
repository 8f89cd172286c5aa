"""Engine benchmark: overhead, HTTP efficiency through convlab.run, store memory.

Run from the project root:  python benchmarks/bench_engine.py [--quick]
Prints figures and ratios against ideals measured in the same run (no pass/fail).

(a) overhead: 5,000 single-turn cases, 3 assertions each, an async function agent that
    returns at once, results store on -> cases per second (target >= 3,000).
(b) HTTP: N=1000 single-turn cases at 50 in flight through convlab.run with assertions
    against ../shared/bench/mock_openai.py at 50 ms latency, side by side with the raw
    aiohttp baseline (../shared/bench/anchor_ideal.py) -> ratios to ideal (target <= 1.2x).
(c) memory: peak RSS of reading back a store of 100,000 results (load_run).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


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


def overhead(n: int) -> None:
    import convlab as cl

    async def agent(messages):
        return "ok"

    suite = _suite(n)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = cl.run(suite, agent, parallel=16, store=Path(tmp) / "s.jsonl", progress=False)
        dt = time.perf_counter() - t0
    ok = sum(r.status == "passed" for r in run.results)
    rate = n / dt
    print(
        f"(a) overhead: {n} cases x 3 assertions, store on: {dt:.2f} s, "
        f"{rate:,.0f} cases/s ({ok} passed); target >= 3,000/s -> {rate / 3000:.2f}x target"
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

    mock = SHARED / "bench" / "mock_openai.py"
    if not mock.exists():
        print("(b) http: ../shared/bench/mock_openai.py not found; skipped")
        return
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(mock), "--port", str(port), "--latency-ms", str(latency_ms)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        ideal = n * latency_ms / 1000 / conc
        base = subprocess.run(
            [
                sys.executable,
                str(SHARED / "bench" / "anchor_ideal.py"),
                "--client",
                "aiohttp",
                "--base-url",
                f"http://127.0.0.1:{port}/v1",
                "-n",
                str(n),
                "-c",
                str(conc),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        base_s = _seconds_from(base.stdout)
        agent = cl.agents.openai("mock", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
        suite = _suite(n, expect="You said: ")  # the mock echoes the message
        t0 = time.perf_counter()
        run = cl.run(suite, agent, parallel=conc, progress=False)
        dt = time.perf_counter() - t0
        ok = sum(r.status == "passed" for r in run.results)
        print(f"(b) http: N={n} C={conc} latency={latency_ms} ms, ideal {ideal:.2f} s")
        if base_s:
            print(f"    raw aiohttp baseline: {base_s:.2f} s = {base_s / ideal:.2f}x ideal")
        else:
            print(f"    raw aiohttp baseline: could not read its output: {base.stdout[-300:]!r}")
        print(
            f"    convlab.run + 3 assertions: {dt:.2f} s = {dt / ideal:.2f}x ideal"
            + (f", {dt / base_s:.2f}x baseline" if base_s else "")
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
        for key in ("wall_s",):
            if isinstance(rec, dict) and key in rec:
                return float(rec[key])
    import re

    m = re.findall(r"(\d+\.\d+)\s*s\b", text)
    return float(m[-1]) if m else None


def memory(n: int) -> None:
    """Peak RSS of a run that stores n results, then of reading that store back (fresh
    processes each, so neither pays for the other)."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.jsonl"
        write = f"""
import resource, sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
import convlab as cl
from bench_engine import _suite
async def agent(messages):
    return "ok"
t0 = time.perf_counter()
run = cl.run(_suite({n}), agent, parallel=16, store={str(store)!r}, progress=False)
dt = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"(c) memory: a run storing {{len(run.results):,}} results: {{dt:.1f}} s, "
      f"peak RSS {{peak:.0f}} MB")
"""
        read = f"""
import resource, time
from convlab.engine.store import read_store
t0 = time.perf_counter()
_, results = read_store({str(store)!r})
dt = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"    reading the {{len(results):,}} stored results back: {{dt:.1f}} s, "
      f"peak RSS {{peak:.0f}} MB")
"""
        subprocess.run([sys.executable, "-c", write], check=False)
        size = store.stat().st_size / 1e6 if store.exists() else 0
        print(f"    store file: {size:.0f} MB")
        subprocess.run([sys.executable, "-c", read], check=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    args = ap.parse_args()
    os.chdir(ROOT)
    overhead(1000 if args.quick else 5000)
    http(200 if args.quick else 1000, 50, 50)
    memory(10_000 if args.quick else 100_000)


if __name__ == "__main__":
    main()
