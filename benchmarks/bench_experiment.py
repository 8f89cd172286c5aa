"""Variants in one call against the same variants run one after another.

Run from the project root:  python benchmarks/bench_experiment.py [--variants 4] [--cases 12]
[--runs 5] [--parallel 4] [--latency-ms 50]

Prints figures measured in the same run (no pass/fail): 4 variants x 12 cases x 5 runs of an
agent that answers after 50 ms, (a) as one experiment, `cl.run(suite, {name: agent, ...})`,
all variants sharing one `parallel`; (b) as 4 `cl.run` calls in sequence at the same
`parallel`. For each variant: the time from the start to its first finished instance, and to
its last (its wall time); then the total wall time of each way.

One `parallel` is shared, so the total is about the same both ways (the same work through the
same slots); what changes is when each variant's first results arrive: in sequence the last
variant waits for every other one to finish.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import convlab as cl
from convlab.engine.events import CaseFinished, VariantEvent
from convlab.model import Case, Message, Suite


def _suite(cases: int) -> Suite:
    check = [{"kind": "contains", "value": "ok"}]
    return Suite(
        id="bench-experiment",
        cases=[
            Case(id=f"c{i}", input=[Message(content=f"m {i}")], assertions=check)
            for i in range(cases)
        ],
    )


def _agent(latency_s: float) -> Any:
    async def agent(messages: Any) -> str:
        await asyncio.sleep(latency_s)
        return "ok"

    return agent


def _experiment(suite: Suite, names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    t0 = time.perf_counter()

    def listen(event: Any) -> None:
        if isinstance(event, VariantEvent) and isinstance(event.event, CaseFinished):
            now = time.perf_counter() - t0
            first.setdefault(event.variant, now)
            last[event.variant] = now

    agents = {name: _agent(args.latency_ms / 1000) for name in names}
    exp = cl.run(suite, agents, runs=args.runs, parallel=args.parallel, progress=listen)
    total = time.perf_counter() - t0
    assert all(run.summary["passed"] == args.cases * args.runs for run in exp.runs.values())
    return {"first": first, "last": last, "total": total}


def _sequence(suite: Suite, names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    t0 = time.perf_counter()
    for name in names:

        def listen(event: Any, name: str = name) -> None:
            if isinstance(event, CaseFinished):
                now = time.perf_counter() - t0
                first.setdefault(name, now)
                last[name] = now

        run = cl.run(
            suite,
            _agent(args.latency_ms / 1000),
            runs=args.runs,
            parallel=args.parallel,
            progress=listen,
        )
        assert run.summary["passed"] == args.cases * args.runs
    return {"first": first, "last": last, "total": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    suite = _suite(args.cases)
    names = [f"v{i + 1}" for i in range(args.variants)]
    per = args.cases * args.runs
    print(
        f"{args.variants} variants x {args.cases} cases x {args.runs} runs ({per} instances "
        f"each) of a {args.latency_ms:g} ms agent, parallel={args.parallel}"
    )
    warm = argparse.Namespace(**{**vars(args), "cases": 1, "runs": 1, "latency_ms": 0.0})
    _experiment(_suite(1), names, warm)  # imports and first-call costs out of the figures
    _sequence(_suite(1), names[:1], warm)
    together = _experiment(suite, names, args)
    apart = _sequence(suite, names, args)
    print(
        f"{'variant':<8} {'first result: experiment':>25} {'in sequence':>12}"
        f" {'wall time: experiment':>22} {'in sequence':>12}"
    )
    for name in names:
        print(
            f"{name:<8} {together['first'][name]:>24.2f}s {apart['first'][name]:>11.2f}s"
            f" {together['last'][name]:>21.2f}s {apart['last'][name]:>11.2f}s"
        )
    print(f"{'total':<8} {'':>25} {'':>12} {together['total']:>21.2f}s {apart['total']:>11.2f}s")
    slowest_first = max(together["first"].values()), max(apart["first"].values())
    print(
        f"every variant's first result: within {slowest_first[0]:.2f}s as one experiment, "
        f"{slowest_first[1]:.2f}s in sequence"
    )


if __name__ == "__main__":
    main()
