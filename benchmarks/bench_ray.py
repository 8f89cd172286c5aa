#!/usr/bin/env python3
"""Ray executor benchmark: warm runs and a rate-limited endpoint, this tree beside another.

Each figure comes from a fresh process per tree (so each pays its own cluster start), this
tree first, then the tree in `--before DIR` (a checkout of an earlier commit: `git worktree
add DIR REV`), in the same run:

- warm: `--runs` runs, one after the other in one process, of N single-turn cases whose
  agent is `await asyncio.sleep(L)`, at `--parallel` in flight on `cl.executors.ray(
  workers=2)`: for each run, the wall time from calling `cl.run` to its return as a
  multiple of the ideal N x L / parallel, and the delay from calling `cl.run` to the first
  result. Targets (issue 36): the second and later runs at most 1.3x the ideal, the first
  result within 0.5 s.
- limits: `--limit-n` cases against an HTTP endpoint on 127.0.0.1 that answers 429 to any
  request beyond `--capacity` in flight (a fixed rate: capacity / latency requests a
  second), on the local engine and on Ray (2 workers), `--limit-parallel` in flight, 3
  retries: the share of requests answered 429 and the instances that ran out of retries.
  Target: Ray's share within 2 points of the local engine's, and none out of retries.

    python benchmarks/bench_ray.py [--before DIR] [-n 2000] [--latency-ms 50]
                                   [--parallel 200] [--runs 4] [--skip warm|limits]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_WARM = 1.3
TARGET_FIRST_S = 0.5
TARGET_POINTS = 2.0


# -- what runs in each tree's own process -----------------------------------------------------


def _suite(n: int) -> Any:
    from convlab.model import Case, Message, Suite

    checks = [{"kind": "contains", "value": "ok"}]
    cases = [
        Case(id=f"c{i}", input=[Message(content=f"m {i}")], assertions=checks) for i in range(n)
    ]
    return Suite(id="bench", cases=cases)


def child_warm(args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    import convlab as cl
    from convlab.engine.events import CaseFinished

    latency = args.latency_ms / 1000

    async def sleepy(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(latency)
        return "ok"

    suite = _suite(args.n)
    ideal = args.n * latency / args.parallel
    runs = []
    for _ in range(args.runs):
        first: list[float] = []

        def listener(event: Any, first: list[float] = first) -> None:
            if isinstance(event, CaseFinished) and not first:
                first.append(time.perf_counter())

        t0 = time.perf_counter()
        try:
            run = cl.run(
                suite,
                sleepy,
                parallel=args.parallel,
                executor=cl.executors.ray(workers=2),
                progress=listener,
            )
        except Exception as exc:  # the tree before raised on a failed start
            runs.append({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"})
            continue
        wall = time.perf_counter() - t0
        passed = sum(r.status == "passed" for r in run.results)
        runs.append(
            {
                "wall_s": wall,
                "x_ideal": wall / ideal,
                "first_s": (first[0] - t0) if first else None,
                "passed": passed,
                "status": run.status,
                "error": run.error,
            }
        )
    return {"ideal_s": ideal, "runs": runs}


def child_limits(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))  # the tests' fault server
    from fault_server import FaultServer, limited

    import convlab as cl

    out: dict[str, Any] = {}
    for label, options in (("local", {}), ("ray", {"executor": cl.executors.ray(workers=2)})):
        endpoint = limited(args.capacity, delay=args.latency_ms / 1000, retry_after="0")
        with FaultServer(endpoint, path="/chat") as server:
            t0 = time.perf_counter()
            run = cl.run(
                _suite(args.limit_n),
                cl.agents.http(server.url),
                parallel=args.limit_parallel,
                retries=3,
                progress=False,
                **options,
            )
            wall = time.perf_counter() - t0
            log = server.counts.log
        out[label] = {
            "requests": len(log),
            "rejected_pct": 100 * sum(log) / max(len(log), 1),
            "out_of_retries": sum(r.status == "error" for r in run.results),
            "wall_s": wall,
            "status": run.status,
        }
    return out


# -- the driver ---------------------------------------------------------------------------------


def in_tree(tree: Path, what: str, args: argparse.Namespace) -> dict[str, Any] | str:
    """Run `what` in a fresh process importing convlab from `tree`; its figures (or why not)."""
    env = dict(os.environ, PYTHONPATH=str(tree), RAY_USAGE_STATS_ENABLED="0")
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", what, *sys.argv[1:]]
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=args.timeout, cwd=tree
        )
    except subprocess.TimeoutExpired:
        return f"gave no figure within {args.timeout:.0f} s"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed ({tail[:200]})"
    got: dict[str, Any] = json.loads(lines[-1])
    return got


def show_warm(label: str, got: dict[str, Any] | str) -> None:
    if isinstance(got, str):
        print(f"  {label}: {got}")
        return
    print(f"  {label} (ideal {got['ideal_s']:.2f} s; {got['convlab']}):")
    for i, run in enumerate(got["runs"], 1):
        if "wall_s" not in run:
            print(f"    run {i}: {run['error']}")
            continue
        first = f"{run['first_s']:.2f} s" if run["first_s"] is not None else "none"
        later = i > 1
        mark = ""
        if later:
            ok = run["x_ideal"] <= TARGET_WARM and (run["first_s"] or 99) <= TARGET_FIRST_S
            mark = "  ok" if ok else "  MISSED"
        print(
            f"    run {i}: {run['wall_s']:6.2f} s = {run['x_ideal']:5.2f}x ideal, first result "
            f"{first} after cl.run, {run['passed']} passed{mark}"
        )


def show_limits(label: str, got: dict[str, Any] | str) -> None:
    if isinstance(got, str):
        print(f"  {label}: {got}")
        return
    for where in ("local", "ray"):
        f = got[where]
        print(
            f"  {label}, {where:<5}: {f['requests']} requests, {f['rejected_pct']:5.1f}% got 429, "
            f"{f['out_of_retries']} instances out of retries, {f['wall_s']:.2f} s"
        )
    gap = got["ray"]["rejected_pct"] - got["local"]["rejected_pct"]
    ok = abs(gap) <= TARGET_POINTS and got["ray"]["out_of_retries"] == 0
    print(
        f"  {label}: Ray - local = {gap:+.1f} points of 429 (target within {TARGET_POINTS:g}, "
        f"none out of retries): {'ok' if ok else 'MISSED'}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--before", type=Path, help="another convlab tree to measure beside")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--parallel", type=int, default=200)
    ap.add_argument("--runs", type=int, default=4, help="runs one after the other, one process")
    ap.add_argument("--limit-n", type=int, default=1000)
    ap.add_argument("--limit-parallel", type=int, default=64)
    ap.add_argument("--capacity", type=int, default=8, help="requests in flight before 429")
    ap.add_argument("--skip", choices=("warm", "limits"), action="append", default=[])
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per tree and figure")
    ap.add_argument("--child", choices=("warm", "limits"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        work = child_warm if args.child == "warm" else child_limits
        import convlab

        print(json.dumps(dict(work(args), convlab=convlab.__file__)))
        return 0
    trees = [("this tree", ROOT)]
    if args.before is not None:
        trees.append((f"before ({args.before})", args.before.resolve()))
    if "warm" not in args.skip:
        print(
            f"warm: {args.runs} runs in one process, {args.n} cases x {args.latency_ms:g} ms, "
            f"parallel={args.parallel}, 2 Ray workers (targets from run 2: <= {TARGET_WARM}x "
            f"ideal, first result <= {TARGET_FIRST_S} s)"
        )
        for label, tree in trees:
            show_warm(label, in_tree(tree, "warm", args))
    if "limits" not in args.skip:
        rate = args.capacity / (args.latency_ms / 1000)
        print(
            f"limits: {args.limit_n} cases, an endpoint that admits {args.capacity} in flight "
            f"({rate:.0f} requests/s), parallel={args.limit_parallel}, retries=3"
        )
        for label, tree in trees:
            show_limits(label, in_tree(tree, "limits", args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
