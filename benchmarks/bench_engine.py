"""Engine benchmark: per-case cost in process, HTTP through convlab.run, memory.

Run from the project root:

    python benchmarks/bench_engine.py [--quick] [--only a,b,c] [--before DIR]

Prints figures and ratios against baselines measured in the same run (no pass/fail): the
machine's load moves the absolute figures, the ratios much less. `--before DIR` measures
the convlab tree in DIR too (a checkout of an earlier commit: `git worktree add DIR REV`),
each part alternating with this tree's, and prints the two side by side.

(a) in process: N single-turn cases, 3 assertions each (contains, regex, not_contains), the
    results store on, an async and a sync function agent that answer at once -> cases/s,
    side by side with the ideal: a plain asyncio loop, same concurrency, that calls the
    agent, makes the 3 checks and writes the same kind of JSONL line per case.
(b) HTTP: N=1000 single-turn cases at 50 in flight through convlab.run with assertions
    against benchmarks/support/mock_openai.py at 50 ms latency, side by side with the raw
    aiohttp baseline (benchmarks/support/anchor_ideal.py); benchmarks/bench_http.py has more.
(c) memory:
    - the peak resident memory a result costs *during* a run with a store (target <= 1 KB):
      runs of two sizes (single-turn cases, 3 checks, runs=10) in separate processes, the
      difference of their peaks over the difference of their result counts;
    - the store line of a passed single-turn case (target <= 1 KB);
    - reading 100,000 stored results back (`read_store`, target <= 1 s), and `load_run`
      with `Run.df` over them.
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


def _no_history(cl: Any) -> dict[str, Any]:
    """`history=False` for a convlab that records runs (an earlier tree has no such option):
    the figures measure the runs, and the user's run history gets no benchmark runs."""
    import inspect

    return {"history": False} if "history" in inspect.signature(cl.run).parameters else {}


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


def in_process(n: int, repeat: int) -> dict[str, Any]:
    """Cases/s of the ideal loop and of convlab.run with an async and a sync agent."""
    import convlab as cl

    async def async_agent(messages):
        return "ok"

    def sync_agent(messages):
        return "ok"

    suite = _suite(n)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.jsonl"
        off = _no_history(cl)
        cl.run(_suite(200), async_agent, parallel=16, store=store, progress=False, **off)
        ideal = _rate(lambda: _ideal(n, 16, Path(tmp) / "i.jsonl"), n, repeat)

        def one(agent):
            store.unlink()  # a new store each time (as in every tree measured)
            run = cl.run(suite, agent, parallel=16, store=store, progress=False, **off)
            assert run.summary["passed"] == n, run.summary

        rate_async = _rate(lambda: one(async_agent), n, repeat)
        rate_sync = _rate(lambda: one(sync_agent), n, repeat)
    return {"n": n, "ideal": ideal, "async": rate_async, "sync": rate_sync}


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


def http(n: int, conc: int, latency_ms: int) -> dict[str, Any]:
    """Seconds of the raw aiohttp baseline and of convlab.run, N cases at C in flight."""
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
        anchor = BENCH / "anchor_ideal.py"
        base = subprocess.run(
            [sys.executable, str(anchor), "--client", "aiohttp", "--base-url",
             f"http://127.0.0.1:{port}/v1", "-n", str(n), "-c", str(conc)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        agent = cl.agents.openai("mock", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
        suite = _suite(n, expect="You said: ")  # the mock echoes the message
        t0 = time.perf_counter()
        run = cl.run(suite, agent, parallel=conc, progress=False, **_no_history(cl))
        dt = time.perf_counter() - t0
        return {
            "n": n,
            "conc": conc,
            "latency_ms": latency_ms,
            "ideal_s": n * latency_ms / 1000 / conc,
            "baseline_s": _seconds_from(base.stdout),
            "convlab_s": dt,
            "passed": run.summary["passed"],
        }
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


_PEAK = """
import gc, resource, sys, time
sys.path.insert(0, {bench!r})
import convlab as cl
from bench_engine import _no_history, _suite
async def agent(messages):
    return "ok"
off = _no_history(cl)
cl.run(_suite(100), agent, progress=False, **off)  # imports and first-use caches
gc.collect()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
suite = _suite({cases})
t0 = time.perf_counter()
run = cl.run(suite, agent, runs=10, parallel=16, store={store!r}, progress=False, **off)
print(len(run.results), time.perf_counter() - t0,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before)
"""

_READ = """
import gc, time
from convlab.engine.store import read_store
import convlab
t0 = time.perf_counter()
header, results = read_store({store!r})
dt = time.perf_counter() - t0
del header, results
gc.collect()
t1 = time.perf_counter()
run = convlab.load_run({store!r})
df = run.df
print(len(df), dt, time.perf_counter() - t1)
"""


def _child(code: str) -> list[float]:
    """Run `code` in a fresh process (its `convlab` the one on PYTHONPATH, else installed:
    not the working folder's) and read the numbers it prints."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    ).stdout
    return [float(x) for x in out.split()]


def memory(n: int) -> dict[str, Any]:
    """Peak memory per result during a run with a store (two sizes, separate processes),
    the store line of a passed single-turn case, and reading n results back."""
    out: dict[str, Any] = {"n": n}
    with tempfile.TemporaryDirectory() as tmp:
        peaks = []
        for cases in (n // 50, n // 10):  # runs=10: n/5 and n results
            store = str(Path(tmp) / f"s{cases}.jsonl")
            peaks.append(_child(_PEAK.format(bench=str(Path(__file__).parent), cases=cases,
                                             store=store)))  # fmt: skip
        (small, _, small_peak), (big, big_s, big_peak) = peaks
        out["peak_per_result"] = (big_peak - small_peak) / (big - small)
        out["run_s"] = big_s
        store = Path(tmp) / f"s{n // 10}.jsonl"
        lines = store.read_bytes().splitlines()[1:]
        passed = [len(x) + 1 for x in lines if b'"status":"passed"' in x]
        out["line_bytes"] = statistics.median(passed)
        out["store_mb"] = store.stat().st_size / 1e6
        results, read_s, load_df_s = _child(_READ.format(store=str(store)))
        out["read_s"], out["load_df_s"], out["read_n"] = read_s, load_df_s, int(results)
    return out


PARTS = {
    "a": lambda quick: in_process(2000 if quick else 10_000, 1 if quick else 3),
    "b": lambda quick: http(200 if quick else 1000, 50, 50),
    "c": lambda quick: memory(10_000 if quick else 100_000),
}


def _measure_before(before: Path, part: str, quick: bool) -> dict[str, Any]:
    """One part measured on the convlab tree in `before` (this script, run in a child whose
    `convlab` is that tree's)."""
    cmd = [sys.executable, __file__, "--only", part, "--json"] + (["--quick"] if quick else [])
    env = {**os.environ, "PYTHONPATH": str(before)}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    figures: dict[str, Any] = json.loads(out.splitlines()[-1])[part]
    return figures


def _show(part: str, now: dict[str, Any], before: dict[str, Any] | None) -> None:
    def col(fmt: str, key: str, scale: float = 1.0) -> str:
        here = format(now[key] * scale, fmt)
        if before is None:
            return here
        ratio = now[key] / before[key] if before[key] else float("nan")
        return f"{here} (before {format(before[key] * scale, fmt)}, {ratio:.2f}x)"

    if part == "a":
        print(f"(a) in process: {now['n']:,} cases x 3 assertions, store on, parallel=16")
        print(f"    ideal (plain asyncio loop writing JSONL): {col(',.0f', 'ideal')} cases/s")
        print(f"    convlab, async function agent: {col(',.0f', 'async')} cases/s")
        print(f"    convlab, sync function agent: {col(',.0f', 'sync')} cases/s")
        then = f" (before {before['ideal'] / before['async']:.1f}x)" if before else ""
        print(f"    ideal / convlab (async): {now['ideal'] / now['async']:.1f}x{then}")
    elif part == "b":
        print(f"(b) http: N={now['n']} C={now['conc']} latency={now['latency_ms']} ms, "
              f"ideal {now['ideal_s']:.2f} s")  # fmt: skip
        for label, figures in (("this tree", now), ("before", before)):
            if figures and figures["baseline_s"]:
                ratio = figures["convlab_s"] / figures["baseline_s"]
                print(f"    {label}: convlab.run + 3 assertions {figures['convlab_s']:.2f} s, "
                      f"raw aiohttp {figures['baseline_s']:.2f} s: {ratio:.3f}x the raw client "
                      f"(target <= 1.10x; {figures['passed']}/{figures['n']} passed)")  # fmt: skip
    else:
        print(f"(c) memory: stability runs with a store (runs=10), {now['n']:,} results")
        print(f"    peak growth per result during the run: {col(',.0f', 'peak_per_result')} B "
              "(target <= 1,024 B)")  # fmt: skip
        print(f"    a passed single-turn line: {col('.0f', 'line_bytes')} B (target <= 1,024 B)")
        print(f"    read_store of {now['read_n']:,} results: {col('.2f', 'read_s')} s "
              "(target <= 1 s)")  # fmt: skip
        print(f"    load_run + Run.df: {col('.2f', 'load_df_s')} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    ap.add_argument("--only", default="a,b,c", help="which parts: a (in process), b, c")
    ap.add_argument("--before", type=Path, help="also measure the convlab tree in this folder")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = ap.parse_args()
    os.chdir(ROOT)
    figures: dict[str, Any] = {}
    for part in args.only.split(","):
        before = _measure_before(args.before, part, args.quick) if args.before else None
        figures[part] = PARTS[part](args.quick)
        if not args.json:
            _show(part, figures[part], before)
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
