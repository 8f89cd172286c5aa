"""Instructions per in-process case, counted by valgrind: a figure the machine's
load does not move.

Run from the project root:  python benchmarks/bench_instructions.py [--compare OTHER_TREE]

On a shared machine the time of a case moves 2-2.5x from one minute to the next, so a 5%
change cannot be seen in cases/s (bench_engine.py (a)) without many alternating runs. The
number of instructions the CPU executes for a case barely moves. Each workload of
bench_engine.py (a) (N single-turn cases, 3 checks each, store on, parallel=16) runs in a
child process under `valgrind --tool=callgrind` at two sizes; the difference of the two
totals over the difference of the sizes is the cost of one case, without start-up and
imports. The ideal (a plain asyncio loop making the same checks and JSONL lines) is counted
the same way, and the ratio to it is printed. `--only` may also name `suite` (building the
suite's models, which every figure but the ideal's holds).

Every workload but the ideal builds bench_engine's suite (its `Case` models) in the child,
which the timed benchmark does before its clock starts and the ideal's loop does not do at
all: that is counted apart (`suite`) and each figure is
printed whole and without it ("running it"), which is the one compared to the ideal.

`--parts` says where a case's instructions go: it also counts the async workload without the
store, without the checks, and without either, and prints what the store, the three checks
and the rest cost (the differences).

`--compare TREE` counts another checkout of convlab too (e.g. `git worktree add /tmp/old
<commit>`) and prints the change. Instruction counts leave out cache misses and memory
stalls: the time follows them closely for this interpreter-bound loop, not exactly.
Needs valgrind (Debian: `apt-get install valgrind`); about a minute per workload and size, as
many at once as the machine has cores.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("ideal", "async", "sync")
MORE = ("suite", "http-raw", "http")
"""Counted when named in `--only`: building the suite's models (a part of every workload's
figure but the ideal's, which builds none); and a request over HTTP (`bench_http.py`'s
workload: the mock server at 0 ms, outside valgrind, answering `gpt-4o-mini` with its usage,
50 in flight) through the raw aiohttp client (`http-raw`) and as a `convlab.run` case with
three checks, its usage priced (`http`): the CPU a request costs the client, which the
wall-clock ratio of `bench_http.py` shows only through the machine's load."""
PARTS = ("async", "async-nostore", "async-nochecks", "async-bare")
"""`--parts`: the async workload, then without the store, the checks, or either."""


def child(kind: str, n: int) -> None:
    """One workload of `n` cases (after the same warm-up at every size)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_engine import _ideal, _suite

    if kind.startswith("http"):
        _http_child(kind, n)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "ideal":
            _ideal(200, 16, Path(tmp) / "w.jsonl")
            _ideal(n, 16, Path(tmp) / "i.jsonl")
            return
        if kind == "suite":  # what the other workloads' figures include of building it
            _suite(200)
            _suite(n)
            return
        import convlab as cl

        async def async_agent(messages: list[dict[str, str]]) -> str:
            return "ok"

        def sync_agent(messages: list[dict[str, str]]) -> str:
            return "ok"

        agent = sync_agent if kind == "sync" else async_agent
        store = None if kind in ("async-nostore", "async-bare") else Path(tmp) / "s.jsonl"
        suite = _unchecked if kind in ("async-nochecks", "async-bare") else _suite
        off = _no_history(cl)
        cl.run(suite(200), agent, parallel=16, store=store, progress=False, **off)
        if store is not None:
            store.unlink()  # a new store (as in every tree counted)
        run = cl.run(suite(n), agent, parallel=16, store=store, progress=False, **off)
        assert run.summary["passed"] == n, run.summary


def _http_child(kind: str, n: int) -> None:
    """`n` requests (after 200 to warm up) through the raw client or `convlab.run`."""
    import asyncio

    import bench_http

    anchor = bench_http.load_anchor()
    with bench_http.MockServer(0) as server:
        for size in (200, n):
            if kind == "http-raw":
                got = asyncio.run(anchor.run(server.url, size, 50, bench_http.MODEL, "aiohttp"))
                assert got["passed"] == size, got
            else:
                agent = bench_http._mock_agent(server.url)
                _, run = bench_http._timed_run(bench_http._suite(size), agent, 50)
                assert run.summary["passed"] == size, run.summary


def _no_history(cl: Any) -> dict[str, Any]:
    """`history=False` for a convlab that records runs (an earlier tree has no such option):
    the figures measure the runs, and the user's run history gets no benchmark runs."""
    import inspect

    return {"history": False} if "history" in inspect.signature(cl.run).parameters else {}


def _unchecked(n: int) -> Any:
    """bench_engine's suite without its three checks."""
    from convlab.model import Case, Message, Suite

    cases = [Case(id=f"c{i}", input=[Message(content=f"message {i}")]) for i in range(n)]
    return Suite(id="bench", cases=cases)


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


def per_case(
    pool: ThreadPoolExecutor, trees: list[Path], kinds: list[str], small: int, large: int
) -> Callable[[Path, str], float]:
    """Start every count at once, as many at a time as the machine has cores (valgrind runs
    a program on one); the figure of a tree and workload waits for its two counts."""
    counts = {
        (t, k, n): pool.submit(count, t, k, n) for k in kinds for t in trees for n in (large, small)
    }

    def figure(tree: Path, kind: str) -> float:
        big, little = counts[tree, kind, large].result(), counts[tree, kind, small].result()
        return (big - little) / (large - small)

    return figure


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compare", type=Path, help="another convlab checkout to count too")
    p.add_argument("--small", type=int, default=200)
    p.add_argument("--large", type=int, default=1000)
    p.add_argument("--only", default=",".join(WORKLOADS), help="of ideal,async,sync,suite")
    p.add_argument("--parts", action="store_true", help="what the store and the checks cost")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind not found: install it (Debian: apt-get install valgrind)")
        return 2
    kinds = list(PARTS) if args.parts else [k for k in args.only.split(",") if k]
    unknown = sorted(set(kinds) - {*WORKLOADS, *MORE, *PARTS})
    if unknown:
        p.error(f"--only: unknown workloads {unknown} (of {', '.join(WORKLOADS + MORE)})")
    if set(kinds) - {"ideal", "suite", "http-raw"}:  # the others hold building the suite
        kinds = ["suite", *[k for k in kinds if k != "suite"]]
    trees = [ROOT, *([args.compare.resolve()] if args.compare else [])]
    print(f"instructions per case (callgrind; N={args.large} minus N={args.small})")
    found: dict[str, float] = {}
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        figure = per_case(pool, trees, kinds, args.small, args.large)
        for kind in kinds:
            figures = [figure(tree, kind) for tree in trees]
            found[kind] = figures[0]
            print(_line(kind, figures, found, trees), flush=True)
    if args.parts:
        _print_parts(found)
    return 0


def _line(kind: str, figures: list[float], found: dict[str, float], trees: list[Path]) -> str:
    """A workload's figure: the whole case, and the part that runs it (the whole but for
    building the suite's models, which the ideal's loop does not do), against the ideal."""
    line = f"  {kind:5} {figures[0]:>11,.0f}"
    if kind == "suite":
        return line + "  building the suite's models: part of each figure below, not the ideal's"
    if kind in ("ideal", "http-raw"):
        return line + _change(figures, trees)
    if kind == "http":
        line += f"; {figures[0] - found['suite']:,.0f} without building the suite"
        if "http-raw" in found:
            line += f" = {figures[0] / found['http-raw']:.2f}x the raw client's request"
        return line + _change(figures, trees)
    running = figures[0] - found["suite"]
    line += f"; running it {running:,.0f}"
    if "ideal" in found:
        line += f" = {running / found['ideal']:.1f}x the ideal"
    if len(figures) > 1 and kind != "floor":
        change = figures[0] / figures[1]
        line += f"; {trees[1]}: {figures[1]:,.0f} (this tree: {change:.3f}x)"
    return line


def _change(figures: list[float], trees: list[Path]) -> str:
    if len(figures) < 2:
        return ""
    return f"; {trees[1]}: {figures[1]:,.0f} (this tree: {figures[0] / figures[1]:.3f}x)"


def _print_parts(found: dict[str, float]) -> None:
    """What the store, the checks and the rest cost of one async case (this tree)."""
    whole = found["async"]
    parts = {
        "the store (header, line written)": whole - found["async-nostore"],
        "three checks (evaluated, kept, in the line)": whole - found["async-nochecks"],
        "the rest (plan, agent call, models, line)": found["async-bare"] - found["suite"],
        "building the suite's models (not run time)": found["suite"],
    }
    print(f"where an async case's {whole:,.0f} instructions go (the parts overlap a little):")
    for name, value in parts.items():
        print(f"  {name:45} {value:>9,.0f}  {value / whole:.0%}")


if __name__ == "__main__":
    sys.exit(main())
