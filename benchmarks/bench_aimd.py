#!/usr/bin/env python3
"""Adaptive concurrency benchmark: a rate-limited endpoint, with AIMD on and off, in one run.

Starts an aiohttp server on 127.0.0.1 that answers each request after `--latency-ms` and
answers 429 (`Retry-After: 0`) to any request beyond `--capacity` in flight, then runs an
N-case suite through `convlab.agents.http(...)` at `--parallel` with adaptive concurrency on
(the default) and off. For each it prints the requests sent, the share rejected (overall and
after the first quarter, once the limit has settled), the cases that ended in error, and the
wall time as a ratio to the ideal N x latency / capacity measured by the same clock.

    python benchmarks/bench_aimd.py [-n 1000] [--parallel 32] [--capacity 8] [--latency-ms 20]

Target (issue #14): fewer than 5% of requests rejected after the limit settles with AIMD on;
far more with it off.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the tests' fault server

from fault_server import FaultServer, limited  # noqa: E402

import convlab as cl  # noqa: E402
from convlab.model import Case, Message, Suite  # noqa: E402

TARGET_SETTLED = 0.05


def measure(args: argparse.Namespace, adaptive: bool) -> None:
    cases = [Case(id=f"c{i}", input=[Message(content="hi")]) for i in range(args.n)]
    endpoint = limited(args.capacity, delay=args.latency_ms / 1000, retry_after="0")
    with FaultServer(endpoint, path="/chat") as server:
        t0 = time.perf_counter()
        run = cl.run(
            Suite(id="bench", cases=cases),
            cl.agents.http(server.url, adaptive=adaptive),
            parallel=args.parallel,
            retries=args.retries,
            progress=False,
        )
        took = time.perf_counter() - t0
    log = server.counts.log
    later = log[len(log) // 4 :]
    settled = sum(later) / max(len(later), 1)
    ideal = args.n * args.latency_ms / 1000 / args.capacity
    errors = sum(r.status != "passed" for r in run.results)
    mark = "" if not adaptive else ("  ok" if settled < TARGET_SETTLED else "  MISSED")
    print(  # a benchmark prints its figures
        f"AIMD {'on ' if adaptive else 'off'}: {len(log)} requests, {sum(log)} rejected "
        f"({sum(log) / max(len(log), 1):.1%}; {settled:.1%} after the first quarter{mark}), "
        f"{errors} case(s) not passed, {took:.2f}s = {took / ideal:.2f}x ideal"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--capacity", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--retries", type=int, default=8)
    args = parser.parse_args()
    print(  # a benchmark prints its figures
        f"{args.n} cases, parallel={args.parallel}, the endpoint takes {args.capacity} at once "
        f"({args.latency_ms:g} ms each)"
    )
    measure(args, adaptive=True)
    measure(args, adaptive=False)


if __name__ == "__main__":
    main()
