#!/usr/bin/env python3
"""Ray executor benchmark: the same suite on the local engine and on 2 Ray workers, one run.

Starts a private local Ray cluster (2 CPUs, no dashboard), then runs N single-turn cases
(3 checks each) whose agent is `await asyncio.sleep(L)`, at `--parallel` in flight:

- on the local engine (one process, `parallel` in flight), then
- with `executor=cl.executors.ray(workers=2, per_worker=parallel / 2)`,

and prints, for each, the wall time as a multiple of the ideal N x L / parallel, the
driver's CPU per result (this process's CPU time over the run, divided by N: for Ray it is
the driver's bookkeeping only, the agents run in the workers), and the delay from a result
finishing (its `started_at` + `duration_ms`, stamped where it ran) to the live tree's
listener holding it, p50 and p99. Ray's wall time is counted from the workers being ready
(the `WorkersChanged` event) to the last result; starting the workers is printed apart.

    python benchmarks/bench_ray.py [-n 2000] [--latency-ms 50] [--parallel 200] [--repeat 3]
                                   [--model]

Target: at most 1.15x the ideal on 2 workers x 100 in flight.

`--model` also runs the cases the capacity model of docs/distributed.md is checked
against: several turns per case and fewer in flight per worker, and an HTTP endpoint that
admits only C requests in flight (a provider limit of C / L requests a second, answered 429
beyond it, which the workers' adaptive limits follow); it prints each measured wall time
beside the model's prediction.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the tests' fault server

import convlab as cl  # noqa: E402
from convlab.engine.events import CaseFinished, WorkersChanged  # noqa: E402
from convlab.model import Case, Message, Suite, Turn  # noqa: E402
from convlab.notebook.progress import LiveTree  # noqa: E402

TARGET = 1.15
LATENCY = 0.05


async def sleepy(messages: list[dict[str, Any]]) -> str:
    """The agent: waits LATENCY seconds (an API call), answers."""
    await asyncio.sleep(LATENCY)
    return "ok " + str(messages[-1]["content"])


def suite(n: int, turns: int = 1) -> Suite:
    checks = [
        {"kind": "contains", "value": "ok"},
        {"kind": "regex", "pattern": r"\w+"},
        {"kind": "not_contains", "value": "error"},
    ]
    if turns == 1:
        cases = [
            Case(id=f"c{i}", input=[Message(content=f"m {i}")], assertions=checks) for i in range(n)
        ]
    else:
        cases = [
            Case(
                id=f"c{i}",
                mode="turns",
                turns=[Turn(input={"text": f"m {i}.{t}"}, assertions=checks) for t in range(turns)],
            )
            for i in range(n)
        ]
    return Suite(id="bench", cases=cases)


class Clock:
    """A listener: when the workers were ready, each result's delay to the tree, the end."""

    def __init__(self) -> None:
        self.tree = LiveTree()  # the real live tree, fed first (no kernel: state only)
        self.ready: float | None = None
        self.cpu_ready = self.cpu_last = 0.0
        self.last = 0.0
        self.delays: list[float] = []

    def __call__(self, event: Any) -> None:
        self.tree(event)
        now = time.time()
        if isinstance(event, WorkersChanged) and self.ready is None:
            self.ready, self.cpu_ready = time.perf_counter(), time.process_time()
        elif isinstance(event, CaseFinished):
            self.cpu_last = time.process_time()
            r = event.result
            started = datetime.fromisoformat(r.started_at).timestamp() if r.started_at else now
            self.delays.append(now - started - (r.duration_ms or 0) / 1000)
            self.last = time.perf_counter()


def measure(label: str, s: Suite, agent: Any, ideal: float, **options: Any) -> float:
    clock = Clock()
    t0, cpu0 = time.perf_counter(), time.process_time()
    run = cl.run(s, agent, progress=clock, **options)
    cpu = clock.cpu_last
    n = len(run.results)
    bad = sum(r.status != "passed" for r in run.results)
    start = clock.ready if clock.ready is not None else t0
    wall = clock.last - start
    cpu_used = cpu - (clock.cpu_ready if clock.ready is not None else cpu0)
    d = sorted(clock.delays)
    p50, p99 = d[len(d) // 2] * 1000, d[min(len(d) - 1, int(len(d) * 0.99))] * 1000
    workers = f", workers ready after {start - t0:.1f}s" if clock.ready is not None else ""
    print(  # a benchmark prints its figures
        f"{label:<34} {wall:6.2f}s = {wall / ideal:4.2f}x ideal ({ideal:.2f}s); driver CPU "
        f"{cpu_used / n * 1000:.3f} ms/result; result->tree p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        f"{workers}{'' if not bad else f'; {bad} not passed'}"
    )
    return wall


def main() -> int:
    global LATENCY
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--parallel", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, alternating")
    ap.add_argument("--model", action="store_true", help="also check the capacity model")
    args = ap.parse_args()
    LATENCY = args.latency_ms / 1000
    import logging

    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    t0 = time.perf_counter()
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    print(f"local Ray cluster started in {time.perf_counter() - t0:.1f}s (2 CPUs, no dashboard)")
    try:
        s = suite(args.n)
        ideal = args.n * LATENCY / args.parallel
        per = math.ceil(args.parallel / 2)
        print(f"{args.n} cases x {args.latency_ms:g} ms async agent, {args.parallel} in flight")
        ray_ex = cl.executors.ray(workers=2, per_worker=per)
        locals_, rays = [], []
        for _ in range(args.repeat):  # alternating, so both meet the same load
            locals_.append(measure("local engine", s, sleepy, ideal, parallel=args.parallel))
            rays.append(
                measure(
                    f"ray, 2 workers x {per}",
                    s,
                    sleepy,
                    ideal,
                    parallel=args.parallel,
                    executor=ray_ex,
                )
            )
        local, wall = statistics.median(locals_), statistics.median(rays)
        mark = "ok" if wall / ideal <= TARGET else "MISSED"
        print(
            f"median of {args.repeat}: ray {wall:.2f}s = {wall / ideal:.2f}x ideal (target <= "
            f"{TARGET}: {mark}); local {local:.2f}s = {local / ideal:.2f}x; ray / local = "
            f"{wall / local:.2f}"
        )
        if args.model:
            model_checks(args)
    finally:
        ray.shutdown()
    return 0


def cpu_per_instance(s: Suite) -> float:
    """c_w: CPU seconds the engine spends on one instance of `s` (an agent that answers at
    once, in this process, no listener)."""
    global LATENCY
    saved, LATENCY = LATENCY, 0.0
    try:
        cpu = time.process_time()
        cl.run(s, sleepy, parallel=100, progress=False)
        return (time.process_time() - cpu) / len(s.cases)
    finally:
        LATENCY = saved


def model_checks(args: argparse.Namespace) -> None:
    """Measured wall times beside the capacity model's bounds (docs/distributed.md): at least
    max(A, B/eta, C), at most A + C, with A = N*T*L/(W*P) (the slots), B = N*T/R (the
    provider), C = N*c_w/W (the workers' CPU)."""
    global LATENCY
    from fault_server import FaultServer, limited

    workers = 2
    print("capacity model (docs/distributed.md), W=2 workers:")
    LATENCY = 0.02
    for n, turns, per in ((600, 3, 25), (2000, 1, 50)):
        s = suite(n, turns)
        c_w = cpu_per_instance(s)
        a = n * turns * LATENCY / (workers * per)
        c = n * c_w / workers
        ex = cl.executors.ray(workers=workers, per_worker=per)
        wall = measure(f"N={n} T={turns} L=20ms P={per}", s, sleepy, a, executor=ex)
        print(
            f"  c_w {c_w * 1000:.2f} ms: model {max(a, c):.2f}-{a + c:.2f}s, measured {wall:.2f}s"
        )
    capacity, latency, n = 40, 0.05, 1000
    rate = capacity / latency
    b = n / rate
    for label, options in (
        ("local engine", {}),
        ("ray, 2 workers x 50", {"executor": cl.executors.ray(workers=workers, per_worker=50)}),
    ):
        endpoint = limited(capacity, delay=latency, retry_after="0")
        with FaultServer(endpoint, path="/chat") as server:
            agent = cl.agents.http(server.url)
            wall = measure(
                f"N={n} R={rate:.0f}/s, {label}", suite(n), agent, b, parallel=100, **options
            )
            rejected = sum(server.counts.log) / max(len(server.counts.log), 1)
        print(
            f"  provider bound B = {b:.2f}s (R = {capacity} in flight / {latency * 1000:.0f} ms):"
            f" measured {wall:.2f}s, eta = B / measured = {b / wall:.2f}; {rejected:.0%} of "
            "requests got 429"
        )


if __name__ == "__main__":
    raise SystemExit(main())
