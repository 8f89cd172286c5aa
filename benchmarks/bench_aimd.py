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

A second scenario, a fault mix with a few hanging requests (`--mix N`, 0 skips it): N cases
of which some are answered "429 once", some "500 once", `--hang` never answer, the others
answer after `--latency-ms`; each case has `--mix-timeout` seconds. With AIMD on and off it
prints, side by side, the cases per kind that timed out and the requests per second. Target:
AIMD on has no more timeouts than off and no fewer requests per second (the hanging requests
must not starve the retries and the healthy ones).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the tests' fault server

import asyncio  # noqa: E402
from collections import Counter  # noqa: E402

from aiohttp import web  # noqa: E402
from fault_server import FaultServer, chat_faults, error, hang, limited  # noqa: E402

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


def mix_words(n: int, hanging: int) -> list[str]:
    """The fault mix's last messages: the hanging ones first (they take their slots before
    the others' 429s cut the limit), then "429 once", "500 once" and ok cases interleaved."""
    kinds = ["429 once", "500 once", "ok", "ok", "ok", "ok", "ok", "ok", "ok"]
    words = [f"hang {i}" for i in range(hanging)]
    words += [f"{kinds[i % len(kinds)]} {i}" for i in range(n - hanging)]
    return words


def measure_mix(
    args: argparse.Namespace, adaptive: bool
) -> tuple[Counter[str], Counter[str], float]:
    """Per kind: cases and cases that timed out; and requests per second."""
    latency = args.latency_ms / 1000

    async def ok_later(request: web.Request, n: int) -> web.StreamResponse | None:
        await asyncio.sleep(latency)
        return None

    faults = {"429 once": error(429, times=1), "500 once": error(500, times=1)}
    faults |= {"hang": hang, "ok": ok_later}
    words = mix_words(args.mix, args.hang)
    kind_of = {w: w.rsplit(" ", 1)[0] for w in words}
    with FaultServer(chat_faults(faults, route=lambda w: kind_of.get(w, w))) as server:
        agent = cl.agents.openai("m", base_url=server.base + "/v1", api_key="k", adaptive=adaptive)
        cases = [Case(id=f"c{i}", input=[Message(content=w)]) for i, w in enumerate(words)]
        t0 = time.perf_counter()
        run = cl.run(
            Suite(id="mix", cases=cases),
            agent,
            parallel=args.parallel,
            retries=args.retries,
            timeout=args.mix_timeout,
            progress=False,
        )
        took = time.perf_counter() - t0
        sent = sum(server.counts.seen.values())
    total, timed_out = Counter[str](), Counter[str]()
    for result, word in zip(run.results, words, strict=True):
        total[kind_of[word]] += 1
        if result.status == "timeout":
            timed_out[kind_of[word]] += 1
    return total, timed_out, sent / took


def mix(args: argparse.Namespace) -> None:
    """The fault mix with AIMD on and off, printed side by side."""
    print(  # a benchmark prints its figures
        f"\nfault mix: {args.mix} cases ({args.hang} hang), parallel={args.parallel}, "
        f"timeout {args.mix_timeout:g}s per case, ok answers after {args.latency_ms:g} ms"
    )
    on, off = measure_mix(args, True), measure_mix(args, False)
    print(f"{'timed out':<12}{'AIMD on':>10}{'AIMD off':>10}")  # a benchmark prints
    for kind in sorted(on[0]):
        row = f"{on[1][kind]}/{on[0][kind]}", f"{off[1][kind]}/{off[0][kind]}"
        print(f"{kind:<12}{row[0]:>10}{row[1]:>10}")  # a benchmark prints its figures
    print(f"{'requests/s':<12}{on[2]:>10.1f}{off[2]:>10.1f}")  # a benchmark prints
    fewer = sum(on[1].values()) <= sum(off[1].values())
    faster = on[2] >= off[2] * 0.95  # the same work: within noise of the shared machine
    print("ok" if fewer and faster else "MISSED")  # a benchmark prints its verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=32)
    parser.add_argument("--capacity", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--retries", type=int, default=8)
    parser.add_argument("--mix", type=int, default=200, help="fault-mix cases (0: skip)")
    parser.add_argument("--hang", type=int, default=8, help="fault-mix cases that hang")
    parser.add_argument("--mix-timeout", type=float, default=5.0, help="seconds per case")
    args = parser.parse_args()
    print(  # a benchmark prints its figures
        f"{args.n} cases, parallel={args.parallel}, the endpoint takes {args.capacity} at once "
        f"({args.latency_ms:g} ms each)"
    )
    measure(args, adaptive=True)
    measure(args, adaptive=False)
    if args.mix:
        mix(args)


if __name__ == "__main__":
    main()
