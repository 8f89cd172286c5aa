"""The floor under convlab's per-case path (issue 13): the leanest loop that still writes
convlab's line for bench_engine.py's workload (a).

Run from the project root:  python benchmarks/bench_floor.py [--n 10000] [--repeat 3]

This is a measurement, not an engine. Per case, it does only what a stored result needs:
the agent context and session (the agent protocol), the call through the retry policy, the
thread, turn and trace ids, the three checks' outcome functions, the line (a dict written by
orjson), kept in a `Results` and written to a JSONL file, flushed. It builds no TurnResult,
AssertionResult or CaseResult, no Outcome and no events; it sets no per-case timeout, writes
no store header, runs no hooks and handles no failure. Its first line is checked to be
convlab's own, timings and run id aside, so both loops do the same work for a user.

It prints cases/s of the ideal loop (bench_engine.py's), this floor and `convlab.run`,
alternating, and each as a multiple of the ideal's time. `bench_instructions.py --only
floor` counts its instructions per case.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

RUN_ID = "floor0000000"


def floor(suite: Any, path: Path, parallel: int = 16) -> Any:
    """Run `suite` (bench_engine's: single-turn cases with lean checks that pass) through the
    lean loop; the `Results` it kept."""
    from convlab.agents.calls import Attempts, RetryPolicy, call_agent
    from convlab.agents.protocol import AgentContext, as_agent
    from convlab.checks._core import _LEAN, CheckContext
    from convlab.engine._clock import now
    from convlab.model._ids import case_thread, trace_of, turn_id_of
    from convlab.model._trusted import assign, copied
    from convlab.model.records import Results
    from convlab.plan import expand

    async def reply(messages: list[dict[str, str]]) -> str:
        return "ok"

    agent, policy, results = as_agent(reply), RetryPolicy(), Results()

    def ms(seconds: float) -> float:
        return int(seconds * 1e6 + 0.5) / 1000

    async def worker(todo: Any, fh: Any) -> None:
        for inst in todo:
            case = inst.case
            started, t0 = now(), time.perf_counter()
            ctx = AgentContext(case=case, world={}, instance=inst.label)
            rep = inst.run * case.repetitions + inst.repetition
            thread = case_thread(RUN_ID, case.id, (), rep)
            session = await agent.open(ctx)
            user = [copied(m) for m in case.input]
            sent = time.perf_counter()
            obs = await call_agent(session, list(user), ctx, policy, Attempts())
            await session.close()
            turn_id = turn_id_of(thread, "0")
            assign(obs, thread_id=thread, turn_id=turn_id, trace_id=trace_of(turn_id), effects={})
            checks, passed, seen = [], True, CheckContext(observation=obs, case=case)
            for spec in case.assertions:
                start = time.perf_counter()
                ok, message, expected, actual, _ = _LEAN[spec.kind][1](spec, seen)
                passed = passed and ok
                item = [spec.kind, message, expected]
                if actual != obs.text:
                    item.append(actual)
                checks.append([*item, ms(time.perf_counter() - start)])
            turn = {
                "messages": [{"content": m.content} for m in user],
                "observation": {"text": obs.text, "latency_ms": ms(obs.latency_ms / 1000), "_o": 7},
                "assertions": checks,
                "duration_ms": ms(time.perf_counter() - sent),
            }
            status = "passed" if passed else "failed"
            line = orjson.dumps(
                {
                    "case_id": case.id,
                    "status": status,
                    "reward": 1.0 if passed else 0.0,
                    "turns": [turn],
                    "duration_ms": ms(time.perf_counter() - t0),
                    "started_at": started,
                    "_th": [RUN_ID, rep],
                    "_r": [len(checks)],
                }
            )
            results.add(status, line)
            fh.write(line + b"\n")
            fh.flush()

    async def main(fh: Any) -> None:
        todo = iter(expand(suite))
        await asyncio.gather(*(worker(todo, fh) for _ in range(parallel)))

    with open(path, "wb") as fh:
        asyncio.run(main(fh))
    return results


def _same_work(floor_line: bytes, convlab_line: bytes) -> None:
    """The floor's line is convlab's but for timings, the run id and the record type."""

    def shape(raw: bytes) -> Any:
        data = orjson.loads(raw)
        data.pop("type", None)
        data["duration_ms"] = data["started_at"] = data["_th"][0] = None
        turn = data["turns"][0]
        turn["duration_ms"] = turn["observation"]["latency_ms"] = None
        for check in turn["assertions"]:
            check[-1] = None
        return data

    if shape(floor_line) != shape(convlab_line):
        raise ValueError(f"the floor's line is not convlab's:\n{floor_line!r}\n{convlab_line!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from bench_engine import _ideal, _suite

    import convlab as cl

    async def reply(messages: list[dict[str, str]]) -> str:
        return "ok"

    suite = _suite(args.n)
    rates: dict[str, list[float]] = {"ideal": [], "floor": [], "convlab.run": []}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        loops: dict[str, Callable[[], Any]] = {
            "ideal": lambda: _ideal(args.n, 16, t / "i.jsonl"),
            "floor": lambda: floor(suite, t / "f.jsonl"),
            "convlab.run": lambda: cl.run(
                suite, reply, parallel=16, store=t / "s.jsonl", progress=False
            ),
        }
        for loop in loops.values():  # warm-up, and the lines compared
            loop()
        stored = (t / "s.jsonl").read_bytes().splitlines()[1]
        try:
            _same_work((t / "f.jsonl").read_bytes().splitlines()[0], stored)
        except ValueError as exc:  # its figure would say nothing
            raise SystemExit(str(exc)) from None
        for _ in range(args.repeat):  # alternating: the machine's speed moves by the minute
            for name, loop in loops.items():
                t0 = time.perf_counter()
                loop()
                rates[name].append(args.n / (time.perf_counter() - t0))
    ideal = statistics.median(rates["ideal"])
    print(
        f"{args.n:,} single-turn cases x 3 checks, store on, parallel=16 (median of {args.repeat})"
    )
    for name, got in rates.items():
        rate = statistics.median(got)
        print(f"  {name:12s} {rate:9,.0f} cases/s  ({ideal / rate:4.1f}x the ideal's time)")
    print("  issue 13's target for convlab.run: 10,000 cases/s")


if __name__ == "__main__":
    main()
