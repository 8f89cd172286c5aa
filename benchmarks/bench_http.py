#!/usr/bin/env python3
"""HTTP benchmark: convlab's OpenAI agent against the raw aiohttp baseline, in one run.

Starts benchmarks/support/mock_openai.py (fixed latency per request) on 127.0.0.1, then times N
single-turn requests with at most C in flight through

- the baseline: benchmarks/support/anchor_ideal.py's raw aiohttp client, and
- convlab: `convlab.agents.openai(...)`, one session opened and one turn sent per request,
- convlab.run: the same requests as N whole cases (one turn, three checks each) through
  `convlab.arun` at `parallel=C` (targets: <= 1.05x the baseline at 50 ms, <= 1.3x at 0 ms),

alternating the two `--repeat` times, and prints the median of each as a ratio to the ideal
time (ideal = N x latency / C). Targets: convlab <= 1.2x ideal and within 10% of the
baseline (httpx's default pool is far from the wire at 50 requests in flight, hence the fast
transport). `--httpx` also times a plain httpx client with its default pool, the
thing the fast transport replaces.

Then record and replay: the N-case suite (one turn, three checks per case) through
`convlab.run`, live, then recorded (`cache="record"`), then replayed (`cache="replay"`) with
the mock server stopped, at `parallel=C` and at run()'s default `parallel=4`; it prints the
live run's time over the replay's (target: at least 20x) and the engine's floor (the same
suite on an instant function agent): a replay cannot beat the engine's cost per case, which
at C=50 is most of the live run's time. `--no-replay` skips it.

    python benchmarks/bench_http.py [-n 1000] [-c 50] [--latency-ms 50] [--repeat 3]

Needs uvicorn (the `serve` or `test` extra); with uvloop and httptools installed the mock
server stays far from being the bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("convlab") is None:  # not installed: this checkout's
    sys.path.insert(0, str(ROOT))

from convlab.agents.openai_agent import OpenAIAgent  # noqa: E402
from convlab.agents.protocol import AgentContext  # noqa: E402
from convlab.model.conversation import Message  # noqa: E402

TARGET_IDEAL = 1.2
TARGET_BASELINE = 1.10
TARGET_REPLAY = 20.0
TARGET_RUN_50MS = 1.05
"""convlab.run with 3 checks per case over the raw client, with latency."""
TARGET_RUN_0MS = 1.3
"""The same at 0 ms latency, where only the CPU cost per case shows."""
MODEL = "gpt-4o-mini"
"""The model every client asks for. The mock answers as it (and reports usage), and
genai-prices has its price, so convlab prices each call as it would a user's."""
DEFAULT_PARALLEL = 4
"""run()'s default `parallel`: the replay figures are printed for it and for `-c`."""
"""A replayed run of the suite against the live run at the mock's latency."""


BENCH = Path(__file__).resolve().parent / "support"
"""Where mock_openai.py (the server) and anchor_ideal.py (the raw client) live."""


def load_anchor() -> ModuleType:
    """anchor_ideal.py as a module, for its raw aiohttp client."""
    spec = importlib.util.spec_from_file_location("anchor_ideal", BENCH / "anchor_ideal.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class MockServer:
    """mock_openai.py in a subprocess on a free port; stopped on exit."""

    def __init__(self, latency_ms: float) -> None:
        self.latency_ms = latency_ms
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> MockServer:
        port_file = Path(tempfile.mkdtemp(prefix="convlab-bench-")) / "port"
        cmd = [
            sys.executable,
            str(BENCH / "mock_openai.py"),
            "--port", "0",
            "--latency-ms", str(self.latency_ms),
            "--port-file", str(port_file),
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise SystemExit(f"error: the mock server did not start:\n{err}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}/v1"
        return self

    def stats(self, reset: bool = False) -> dict[str, Any]:
        base = self.url.removesuffix("/v1")
        req = urllib.request.Request(base + "/stats", method="POST" if reset else "GET")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())  # type: ignore[no-any-return]

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


async def run_convlab(base_url: str, n: int, c: int) -> dict[str, Any]:
    """N single-turn conversations through convlab's OpenAI agent, C at a time."""
    agent = OpenAIAgent(MODEL, base_url=base_url, api_key="dummy")
    sem = asyncio.Semaphore(c)
    counts = {"passed": 0, "failed": 0, "errors": 0}

    async def one(i: int) -> None:
        target = f"token-{i}"
        async with sem:
            ctx = AgentContext(instance=str(i))
            try:
                session = await agent.open(ctx)
                obs = await session.send(
                    [Message(role="user", content=f"Please repeat {target} back.")], ctx
                )
                await session.close()
            except Exception:  # counted, like the baseline does
                counts["errors"] += 1
                return
        counts["passed" if target in (obs.text or "") else "failed"] += 1

    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        wall = time.perf_counter() - t0
    finally:
        await agent.aclose()
    return dict(counts, wall_s=wall)


async def run_through_engine(base_url: str, n: int, c: int) -> dict[str, Any]:
    """The same N requests as whole `convlab.arun` cases (one turn, 3 checks each, no store):
    the target is this path's time over the raw client's."""
    import convlab as cl

    suite = _suite(n)
    t0 = time.perf_counter()
    agent = _mock_agent(base_url)
    run = await cl.arun(suite, agent, parallel=c, progress=False, **_no_history(cl))
    wall = time.perf_counter() - t0
    passed = sum(r.status == "passed" for r in run.results)
    errors = sum(r.status == "error" for r in run.results)
    return {"passed": passed, "failed": n - passed - errors, "errors": errors, "wall_s": wall}


def _suite(n: int) -> Any:
    """n single-turn cases, 3 checks each, passing when the mock echoes the case's token."""
    from convlab.model import Case, Suite

    cases = [
        Case(
            id=f"c{i}",
            input=[Message(content=f"Please repeat token-{i} back.")],
            assertions=[
                {"kind": "contains", "value": f"token-{i}"},
                {"kind": "regex", "pattern": r"\w+"},
                {"kind": "not_contains", "value": "error"},
            ],
        )
        for i in range(n)
    ]
    return Suite(id="bench-replay", cases=cases)


def _timed_run(suite: Any, agent: Any, c: int, **cache: Any) -> tuple[float, Any]:
    import convlab as cl

    t0 = time.perf_counter()
    run = cl.run(suite, agent, parallel=c, progress=False, **cache, **_no_history(cl))
    return time.perf_counter() - t0, run


def _no_history(cl: Any) -> dict[str, Any]:
    """`history=False` for a convlab that records runs (an earlier tree has no such option):
    the figures measure the runs, and the user's run history gets no benchmark runs."""
    import inspect

    return {"history": False} if "history" in inspect.signature(cl.run).parameters else {}


def _mock_agent(url: str) -> OpenAIAgent:
    return OpenAIAgent(MODEL, base_url=url, api_key="dummy")


async def _instant(messages: list[dict[str, Any]]) -> str:
    """The engine's floor: an agent that answers at once, as the mock would."""
    return "You said: " + str(messages[-1]["content"])


def replay_figures(
    n: int, parallels: list[int], latency: float, repeat: int
) -> list[dict[str, Any]]:
    """Per `parallel`: the live, recorded and replayed `convlab.run` of the N-case suite, and
    the engine's floor (an instant function agent, no cache); medians of `repeat`."""
    suite = _suite(n)
    rows = []
    for c in parallels:
        with tempfile.TemporaryDirectory(prefix="convlab-cassette-") as folder:
            with MockServer(latency) as server:
                url = server.url
                live = [_timed_run(suite, _mock_agent(url), c) for _ in range(repeat)]
                record = _timed_run(suite, _mock_agent(url), c, cache="record", cache_dir=folder)
            # the server is gone: a call that went live would fail its case
            replay = [
                _timed_run(suite, _mock_agent(url), c, cache="replay", cache_dir=folder)
                for _ in range(repeat)
            ]
            files = sum(1 for _ in Path(folder).rglob("*.json"))
        floor = statistics.median(_timed_run(suite, _instant, c)[0] for _ in range(repeat))
        live_s = statistics.median(t for t, _ in live)
        replay_s = statistics.median(t for t, _ in replay)
        passed = [sum(r.status == "passed" for r in run.results) for _, run in live + replay]
        rows.append(
            {
                "parallel": c,
                "live_s": round(live_s, 3),
                "record_s": round(record[0], 3),
                "replay_s": round(replay_s, 3),
                "floor_s": round(floor, 3),
                "live_over_replay": round(live_s / replay_s, 1),
                "recordings": files,
                "replayed": replay[-1][1].settings["cache"]["replayed"],
                "missed": replay[-1][1].settings["cache"]["missed"],
                "all_passed": all(p == n for p in passed),
                "target_met": live_s / replay_s >= TARGET_REPLAY,
            }
        )
    return rows


def measure(name: str, fn: Any, server: MockServer) -> dict[str, Any]:
    server.stats(reset=True)
    cpu = time.process_time()
    result = asyncio.run(fn())
    result["cpu_s"] = time.process_time() - cpu  # this process's: the mock server is apart
    result["max_in_flight"] = server.stats()["max_in_flight"]
    result["name"] = name
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=1000, help="requests per measurement")
    p.add_argument("-c", "--concurrency", type=int, default=50, help="requests in flight")
    p.add_argument("--latency-ms", type=float, default=50.0, help="mock server latency")
    p.add_argument("--repeat", type=int, default=3, help="measurements per client (median)")
    p.add_argument("--httpx", action="store_true", help="also time plain httpx (default pool)")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    p.add_argument("--no-replay", action="store_true", help="skip the record/replay figures")
    p.add_argument(
        "--before",
        type=Path,
        help="compare with the convlab tree in this folder (a checkout of an earlier commit): "
        "the two measured in turn, --repeat rounds, no replay figures",
    )
    args = p.parse_args(argv)
    if args.before:
        return _alternate(args.before, argv)
    n, c, latency = args.n, args.concurrency, args.latency_ms
    missing = [m for m in ("uvloop", "httptools") if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"note: {' and '.join(missing)} not installed: the mock server may be the "
            "bottleneck (pip install uvloop httptools, or the project's test extra)"
        )
    anchor = load_anchor()
    ideal = n * latency / 1000.0 / c
    clients: dict[str, Any] = {}
    with MockServer(latency) as server:
        plan = [
            ("baseline (raw aiohttp)", lambda: anchor.run(server.url, n, c, MODEL, "aiohttp")),
            ("convlab agents.openai", lambda: run_convlab(server.url, n, c)),
            ("convlab.run (3 checks)", lambda: run_through_engine(server.url, n, c)),
        ]
        if args.httpx:
            plan.append(
                ("httpx default pool", lambda: anchor.run(server.url, n, c, MODEL, "httpx"))
            )
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in plan}
        for _ in range(args.repeat):
            for name, fn in plan:
                runs[name].append(measure(name, fn, server))
    for name, results in runs.items():
        wall = statistics.median(r["wall_s"] for r in results)
        clients[name] = {
            "wall_s": round(wall, 3),
            "ratio_to_ideal": round(wall / ideal, 3) if ideal else None,
            "ms_per_request": round(wall * 1000 / n, 3),
            "cpu_ms_per_request": round(
                statistics.median(r["cpu_s"] for r in results) * 1000 / n, 3
            ),
            "errors": sum(r["errors"] + r["failed"] for r in results),
            "max_in_flight": max(r["max_in_flight"] for r in results),
            "runs_s": [round(r["wall_s"], 3) for r in results],
        }
    base = clients["baseline (raw aiohttp)"]["wall_s"]
    mine = clients["convlab agents.openai"]["wall_s"]
    vs_base = mine / base
    engine_vs_base = clients["convlab.run (3 checks)"]["wall_s"] / base
    run_target = TARGET_RUN_50MS if latency else TARGET_RUN_0MS
    # The targets are about waiting on the wire; with no latency only the CPU cost is shown.
    ok = (mine / ideal <= TARGET_IDEAL and vs_base <= TARGET_BASELINE) if ideal else None
    parallels = sorted({c, DEFAULT_PARALLEL}, reverse=True)
    replayed = None
    if not args.no_replay:
        replayed = replay_figures(n, parallels, latency, args.repeat)
    summary = {
        "n": n,
        "concurrency": c,
        "latency_ms": latency,
        "ideal_s": round(ideal, 3),
        "clients": clients,
        "convlab_vs_baseline": round(vs_base, 3),
        "run_vs_baseline": round(engine_vs_base, 3),
        "run_target_met": engine_vs_base <= run_target,
        "targets_met": ok,
        "replay": replayed,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"N={n} C={c} latency={latency:g} ms ideal={ideal:.3f} s (median of {args.repeat})")
        print(
            f"{'client':<26}{'wall s':>8}{'x ideal':>9}{'ms/req':>8}{'CPU ms/req':>11}"
            f"{'errors':>8}{'in flight':>11}"
        )
        for name, row in clients.items():
            ratio = f"{row['ratio_to_ideal']:.3f}" if row["ratio_to_ideal"] else "-"
            print(
                f"{name:<26}{row['wall_s']:>8.3f}{ratio:>9}{row['ms_per_request']:>8.3f}"
                f"{row['cpu_ms_per_request']:>11.3f}{row['errors']:>8}{row['max_in_flight']:>11}"
            )
        verdict = {True: "met", False: "MISSED", None: "n/a at 0 ms (CPU cost per request)"}[ok]
        print(
            f"convlab / baseline = {vs_base:.3f}; targets (<= {TARGET_IDEAL}x ideal, "
            f"<= {TARGET_BASELINE}x baseline): {verdict}"
        )
        verdict = "met" if engine_vs_base <= run_target else "MISSED"
        print(
            f"convlab.run (3 checks) / baseline = {engine_vs_base:.3f}; target "
            f"(<= {run_target}x at {latency:g} ms): {verdict}"
        )
        for r in replayed or []:
            print(
                f"convlab.run of {n} cases (3 checks each) at parallel={r['parallel']}: "
                f"live {r['live_s']:.3f} s, record {r['record_s']:.3f} s, replay "
                f"{r['replay_s']:.3f} s with the server stopped ({r['replayed']} replayed, "
                f"{r['missed']} missed, {r['recordings']} files); engine floor (instant "
                f"function agent) {r['floor_s']:.3f} s"
            )
            verdict = "met" if r["target_met"] else "MISSED"
            print(
                f"  live / replay = {r['live_over_replay']:.1f}x (target >= {TARGET_REPLAY:g}x: "
                f"{verdict}); replay / floor = {r['replay_s'] / r['floor_s']:.2f}; every case "
                f"passed in every run: {r['all_passed']}"
            )
    errors = sum(row["errors"] for row in clients.values())
    errors += sum(not r["all_passed"] for r in replayed or [])
    return 1 if errors else 0


def _alternate(tree: Path, argv: list[str] | None) -> int:
    """This tree and the convlab tree in `tree` measured in turn, `--repeat` rounds of one
    measurement each (a child process per tree and round, each with its own mock server and
    raw client), so both see the machine's load of the same minutes; prints each round's
    ratios and their medians."""
    args = list(sys.argv[1:] if argv is None else argv)
    i = args.index("--before")
    del args[i : i + 2]
    rounds = 3
    if "--repeat" in args:
        i = args.index("--repeat")
        rounds = int(args[i + 1])
        del args[i : i + 2]
    trees = {"this tree": ROOT, "before": tree}
    got: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for n in range(rounds):
        for name, path in trees.items() if n % 2 == 0 else reversed(trees.items()):
            done = subprocess.run(
                [sys.executable, __file__, *args, "--repeat", "1", "--no-replay", "--json"],
                env={**os.environ, "PYTHONPATH": str(path)},
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                print(f"{name}: FAILED\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
                return 1
            summary = json.loads(done.stdout.splitlines()[-1])
            got[name].append(summary)
            clients = summary["clients"]
            print(
                f"round {n + 1} {name:<9}: convlab.run (3 checks) / raw aiohttp = "
                f"{summary['run_vs_baseline']:.3f}, agents.openai / raw = "
                f"{summary['convlab_vs_baseline']:.3f}; CPU ms a request: raw "
                f"{clients['baseline (raw aiohttp)']['cpu_ms_per_request']:.3f}, convlab.run "
                f"{clients['convlab.run (3 checks)']['cpu_ms_per_request']:.3f}",
                flush=True,
            )
    first = got["this tree"][0]
    print(
        f"N={first['n']} C={first['concurrency']} latency={first['latency_ms']:g} ms, model "
        f"{MODEL} (usage reported and priced), {rounds} rounds alternating, medians:"
    )
    for name, summaries in got.items():
        run = statistics.median(s["run_vs_baseline"] for s in summaries)
        agent = statistics.median(s["convlab_vs_baseline"] for s in summaries)
        cpu = statistics.median(
            s["clients"]["convlab.run (3 checks)"]["cpu_ms_per_request"] for s in summaries
        )
        raw = statistics.median(
            s["clients"]["baseline (raw aiohttp)"]["cpu_ms_per_request"] for s in summaries
        )
        where = ROOT if name == "this tree" else tree
        print(
            f"  {name} ({where}): convlab.run (3 checks) / raw aiohttp = {run:.3f} (target "
            f"<= {TARGET_RUN_50MS}x at 50 ms), agents.openai / raw = {agent:.3f}; CPU a "
            f"request: convlab.run {cpu:.3f} ms, raw client {raw:.3f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
