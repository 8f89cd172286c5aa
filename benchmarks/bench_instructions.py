"""Instructions per in-process case (issue 13), counted by valgrind: a figure the machine's
load does not move.

Run from the project root:  python benchmarks/bench_instructions.py [--compare OTHER_TREE]

On a shared machine the time of a case moves 2-2.5x from one minute to the next, so a 5%
change cannot be seen in cases/s (bench_engine.py (a)) without many alternating runs. The
number of instructions the CPU executes for a case barely moves. Each workload of
bench_engine.py (a) (N single-turn cases, 3 checks each, store on, parallel=16) runs in a
child process under `valgrind --tool=callgrind` at two sizes; the difference of the two
totals over the difference of the sizes is the cost of one case, without start-up and
imports. The ideal (a plain asyncio loop making the same checks and JSONL lines) is counted
the same way, and the ratio to it is printed.

`--compare TREE` counts another checkout of convlab too (e.g. `git worktree add /tmp/old
<commit>`) and prints the change. Instruction counts leave out cache misses and memory
stalls: the time follows them closely for this interpreter-bound loop, not exactly.
Needs valgrind (Debian: `apt-get install valgrind`); about a minute per workload and size.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("ideal", "async", "sync")


def child(kind: str, n: int) -> None:
    """One workload of `n` cases (after the same warm-up at every size)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_engine import _ideal, _suite

    with tempfile.TemporaryDirectory() as tmp:
        if kind == "ideal":
            _ideal(200, 16, Path(tmp) / "w.jsonl")
            _ideal(n, 16, Path(tmp) / "i.jsonl")
            return
        import convlab as cl

        async def async_agent(messages: list[dict[str, str]]) -> str:
            return "ok"

        def sync_agent(messages: list[dict[str, str]]) -> str:
            return "ok"

        agent = async_agent if kind == "async" else sync_agent
        store = Path(tmp) / "s.jsonl"
        cl.run(_suite(200), agent, parallel=16, store=store, progress=False)
        run = cl.run(_suite(n), agent, parallel=16, store=store, progress=False)
        assert run.summary["passed"] == n, run.summary


def count(tree: Path, kind: str, n: int) -> int:
    """The instructions a child process executes, all of it (valgrind's `Collected`)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        kind,
        str(n),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{kind} at N={n} in {tree} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_case(tree: Path, kind: str, small: int, large: int) -> float:
    return (count(tree, kind, large) - count(tree, kind, small)) / (large - small)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compare", type=Path, help="another convlab checkout to count too")
    p.add_argument("--small", type=int, default=200)
    p.add_argument("--large", type=int, default=1000)
    p.add_argument("--only", default=",".join(WORKLOADS), help="ideal,async,sync")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind not found: install it (Debian: apt-get install valgrind)")
        return 2
    kinds = [k for k in args.only.split(",") if k]
    trees = [ROOT, *([args.compare.resolve()] if args.compare else [])]
    print(f"instructions per case (callgrind; N={args.large} minus N={args.small})")
    ideal: float | None = None
    for kind in kinds:
        figures = [per_case(tree, kind, args.small, args.large) for tree in trees]
        if kind == "ideal":
            ideal = figures[0]
        line = f"  {kind:5} {figures[0]:>11,.0f}"
        if ideal and kind != "ideal":
            line += f" = {figures[0] / ideal:.1f}x the ideal"
        if len(figures) > 1 and kind != "ideal":
            line += f"; {trees[1]}: {figures[1]:,.0f} (this tree: {figures[0] / figures[1]:.3f}x)"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
