"""Load benchmark: seconds and peak memory to load big suites and build `suite.df`.

    python benchmarks/bench_load.py [--scenarios 10000] [--lines 100000] [--repeat 3]
                                    [--files 10000] [--mb 200] [--only folder,big]

Generated inputs (in a temporary folder), each measured in a fresh subprocess (so peak RSS is
that load's own):
- an intention-kernel JSON evaluation suite of 10,000 scenarios, 2 steps each, 4 assertions per
  scenario (2 per step: about 470,000 JSON values, under the format's 500,000-value limit);
- a Yao JSONL file of 100,000 cases;
- a folder of 10,000 one-case JSONL files in 20 subfolders, timed as `convlab validate DIR`
  (the whole command: interpreter, imports, load); baseline: the same Python walking the
  folder with `os.scandir` and `json.loads` of every line, no convlab;
- a 200 MB JSONL file (about 1,900,000 cases), its peak RSS as a multiple of the file size;
  baseline: the same Python reading it line by line with `json.loads` (nothing kept).
- a results store of 100,000 results (`--results`; 10,000 single-turn cases with 3 checks,
  runs=10, an instant agent), written by each tree measured: `load_run` + `Run.df` of it, in
  a fresh process per measurement (imports before the clock), and the size of a passed line.
  `--before DIR` measures the convlab tree in DIR (a checkout of an earlier commit: `git
  worktree add DIR REV`) too, each tree reading the store it wrote and this tree also the
  one DIR wrote, alternating.
Targets: JSON <= 1.0 s, JSONL <= 3.0 s, peak RSS <= 500 MB; the folder in <= 3 s; the 200 MB
file at <= 4x its size; the store's load_run + Run.df <= 1.5 s, a passed line <= 600 B.
Imports (convlab, pandas) are done before the clock starts and reported apart for the first
two; the best of `--repeat` runs is printed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = {"json": 1.0, "jsonl": 3.0}
TARGET_MB = 500.0
TARGET_STORE_S = 1.5
"""`load_run` + `Run.df` of 100,000 stored results."""
TARGET_LINE_B = 600
"""A stored passed single-turn line (3 checks)."""
OPERATORS = [("equals", "completed"), ("exists", None), ("contains", {"type": "x"}), ("gte", 1)]


def _assertion(n: int, k: int) -> dict[str, Any]:
    op, value = OPERATORS[(n + k) % len(OPERATORS)]
    spec: dict[str, Any] = {"id": f"a{k}", "kind": "check", "path": ["response", "status"]}
    spec["operator"] = op
    if value is not None:
        spec["value"] = value
    return spec


def make_suite_json(path: Path, scenarios: int) -> None:
    """A valid suite: `scenarios` scenarios, 2 steps, 2 assertions per step."""
    items = []
    for n in range(scenarios):
        steps = [
            {
                "id": f"step-{s}",
                "input": {"text": f"message {s} of scenario {n}"},
                "assertions": [_assertion(n, 2 * s), _assertion(n, 2 * s + 1)],
            }
            for s in range(2)
        ]
        items.append(
            {
                "id": f"scenario-{n:05d}",
                "name": f"Scenario {n}",
                "writePolicy": "read_only",
                "steps": steps,
            }
        )
    suite = {"schemaVersion": 1, "id": "bench", "name": "Benchmark", "scenarios": items}
    path.write_text(json.dumps(suite, indent=2), encoding="utf-8")


def make_jsonl(path: Path, lines: int) -> None:
    """`lines` JSONL cases (Yao's spelling), one per line, a few shapes mixed."""
    with path.open("w", encoding="utf-8") as out:
        for n in range(lines):
            case: dict[str, Any] = {"id": f"case-{n:06d}", "input": f"Question number {n}?"}
            if n % 3 == 0:
                case["assert"] = [{"type": "contains", "value": "answer"}]
            elif n % 3 == 1:
                case["assert"] = {"type": "regex", "value": "(?i)number \\d+"}
            else:
                case["expected"] = {"ok": True}
            out.write(json.dumps(case) + "\n")


def _child(kind: str, path: str, repeat: int) -> None:
    """Runs in the subprocess: import, then time load + df; print one JSON line."""
    start = time.perf_counter()
    import pandas  # noqa: F401  (library import, not load cost)

    import convlab

    imported = time.perf_counter() - start
    best, best_cpu, cases = float("inf"), float("inf"), 0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        suite = convlab.load(path)
        frame = suite.df
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
        cases = len(frame)
        g0 = time.perf_counter()
        gc.collect()  # the collector's later full pass over the loaded suite, reported apart
        deferred = time.perf_counter() - g0
        del suite, frame
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    got = {"seconds": best, "cpu": best_cpu, "rss_mb": rss_mb, "cases": cases}
    got.update(import_s=imported, gc_s=deferred)
    print(json.dumps(got))


def make_folder(root: Path, files: int) -> None:
    """`files` one-case JSONL files, 500 to a subfolder."""
    for n in range(files):
        folder = root / f"part-{n // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        case: dict[str, Any] = {"id": f"case-{n:06d}", "input": f"Question number {n}?"}
        case["assert"] = [{"type": "contains", "value": "answer"}]
        (folder / f"case-{n:06d}.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")


def _scan_folder(root: str) -> int:
    """Baseline: walk the folder and json.loads every line, with nothing of convlab."""
    count, stack = 0, [root]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir():
                    stack.append(entry.path)
                elif entry.name.endswith(".jsonl"):
                    with open(entry.path, encoding="utf-8") as lines:
                        count += sum(1 for line in lines if line.strip() and json.loads(line))
    return count


def _scan_lines(path: str) -> int:
    """Baseline: json.loads of every line, nothing kept."""
    with open(path, encoding="utf-8") as lines:
        return sum(1 for line in lines if line.strip() and json.loads(line))


def _child_rss(kind: str, path: str) -> None:
    """Runs in the subprocess: one big load (or its baseline); print seconds and peak RSS."""
    load = _scan_lines
    if kind == "big":
        import pandas  # noqa: F401  (as a notebook has it: part of the baseline RSS)

        import convlab

        def load(path: str) -> int:
            return len(convlab.load(path).cases)

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0, c0 = time.perf_counter(), time.process_time()
    cases = load(path)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    got = {"seconds": seconds, "cpu": cpu, "rss_mb": rss_mb, "before_mb": before, "cases": cases}
    print(json.dumps(got))


def _run_child(*args: str) -> dict[str, Any] | None:
    proc = subprocess.run(
        [sys.executable, __file__, *args], cwd=ROOT, capture_output=True, text=True
    )
    if proc.returncode != 0:
        print(f"FAILED: {' '.join(args)}\n{proc.stderr[-2000:]}")
        return None
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def measure_folder(root: Path, files: int, repeat: int) -> None:
    """`convlab validate DIR` wall time, best of `repeat`, vs the scandir + json.loads baseline."""
    best, base, cpu = float("inf"), float("inf"), float("inf")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), _children_cpu()
        done = subprocess.run(
            [sys.executable, "-m", "convlab.cli", "validate", str(root)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, _children_cpu() - c0)
        if done.returncode != 0 or f"{files} case(s)" not in done.stdout:
            print(f"folder: convlab validate FAILED\n{done.stdout}{done.stderr[-2000:]}")
            return
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--scan-folder", str(root)], check=True)
        base = min(base, time.perf_counter() - t0)
    print(
        f"folder ({files} one-case JSONL files): convlab validate {best:.2f} s "
        f"(target 3.0 s, ratio {best / 3.0:.2f}), CPU {cpu:.2f} s; baseline scandir + "
        f"json.loads per file {base:.2f} s (convlab / baseline {best / base:.1f}x); both "
        "include the interpreter"
    )


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (wall time is unreliable
    on a shared machine; CPU time is what the command costs)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def measure_big(path: Path) -> None:
    """Peak RSS of loading the big JSONL, as a multiple of its size, vs json.loads per line."""
    size_mb = path.stat().st_size / 2**20
    got = _run_child("--child-rss", "big", str(path))
    base = _run_child("--child-rss", "lines", str(path))
    if got is None or base is None:
        return
    ratio = got["rss_mb"] / size_mb
    print(
        f"big JSONL ({size_mb:.0f} MiB, {got['cases']} cases): peak RSS {got['rss_mb']:.0f} MiB "
        f"= {ratio:.2f}x the file (target 4x, ratio {ratio / 4:.2f}); "
        f"{got['before_mb']:.0f} MiB before loading (Python, pandas, convlab); "
        f"{got['seconds']:.1f} s (CPU {got['cpu']:.1f} s); baseline json.loads per line: peak "
        f"{base['rss_mb']:.0f} MiB = {base['rss_mb'] / size_mb:.2f}x, {base['seconds']:.1f} s "
        f"(CPU {base['cpu']:.1f} s)"
    )


def _measure(kind: str, path: Path, repeat: int, label: str) -> None:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path), "--repeat", str(repeat)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        print(f"{label}: FAILED\n{proc.stderr[-2000:]}")
        return
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    secs, mb = got["seconds"], got["rss_mb"]
    print(
        f"{label}: {got['cases']} cases in {secs:.3f} s "
        f"(target {TARGET_S[kind]:.1f} s, ratio {secs / TARGET_S[kind]:.2f}); "
        f"peak RSS {mb:.0f} MB (target {TARGET_MB:.0f} MB, ratio {mb / TARGET_MB:.2f}); "
        f"CPU {got['cpu']:.3f} s; not counted: imports {got['import_s']:.2f} s, "
        f"a later full gc.collect() {got['gc_s']:.2f} s"
    )


_MAKE_STORE = """
import sys
sys.path.insert(0, {bench!r})
import convlab as cl
from bench_engine import _no_history, _suite
async def agent(messages):
    return "ok"
run = cl.run(_suite({cases}), agent, runs=10, parallel=16, store={store!r}, progress=False,
             **_no_history(cl))
assert run.summary["passed"] == {cases} * 10, run.summary
"""

_LOAD_STORE = """
import json, resource, time
import pandas
import convlab
t0, c0 = time.perf_counter(), time.process_time()
run = convlab.load_run({store!r})
df = run.df
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "cpu": cpu, "rows": len(df), "rss_mb": rss}}))
"""


def _in_tree(tree: Path, code: str) -> dict[str, Any] | None:
    """Run `code` in a fresh process whose `convlab` is `tree`'s; its last JSON line."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        print(f"FAILED in {tree}:\n{proc.stderr[-2000:]}")
        return None
    lines = proc.stdout.strip().splitlines()
    got: dict[str, Any] | None = json.loads(lines[-1]) if lines else {}
    return got


def _passed_line_bytes(store: Path) -> float:
    """The median size of a passed result line (with its newline)."""
    with store.open("rb") as lines:
        sizes = [len(x) for x in lines if b'"status":"passed"' in x and x.startswith(b'{"type":"r')]
    return float(statistics.median(sizes))


def measure_store(root: Path, results: int, repeat: int, before: Path | None) -> None:
    """`load_run` + `Run.df` of a store of `results` results, written by each tree; the
    trees measured in turn, `repeat` rounds; and each tree's passed line."""
    trees = {"this tree": ROOT, **({"before": before} if before else {})}
    stores: dict[str, Path] = {}
    for name, tree in trees.items():
        stores[name] = root / f"{name.replace(' ', '-')}.jsonl"
        code = _MAKE_STORE.format(
            bench=str(Path(__file__).resolve().parent), cases=results // 10, store=str(stores[name])
        )
        if _in_tree(tree, code) is None:
            return
    plan = [(name, tree, stores[name]) for name, tree in trees.items()]
    if before:  # stores already on users' disks: this tree reads the one `before` wrote
        plan.append(("this tree, reading the store before wrote", ROOT, stores["before"]))
    seconds: dict[str, list[float]] = {label: [] for label, _, _ in plan}
    cpu: dict[str, list[float]] = {label: [] for label, _, _ in plan}
    last: dict[str, dict[str, Any]] = {}
    for n in range(repeat):
        for label, tree, store in plan if n % 2 == 0 else reversed(plan):
            got = _in_tree(tree, _LOAD_STORE.format(store=str(store)))
            if got is None:
                return
            seconds[label].append(got["seconds"])
            cpu[label].append(got["cpu"])
            last[label] = got
    print(f"store of {results:,} results (10 runs of single-turn cases, 3 checks each):")
    for label, _, _ in plan:
        best = min(seconds[label])
        got = last[label]
        runs = ", ".join(f"{x:.2f}" for x in seconds[label])
        print(
            f"  {label}: load_run + Run.df {best:.2f} s, best of {repeat} alternating ({runs}; "
            f"target {TARGET_STORE_S} s, ratio {best / TARGET_STORE_S:.2f}); {got['rows']:,} "
            f"rows, CPU {min(cpu[label]):.2f} s, peak RSS {got['rss_mb']:.0f} MiB"
        )
    for name, store in stores.items():
        size = _passed_line_bytes(store)
        print(
            f"  {name}: a passed single-turn line {size:.0f} B (target {TARGET_LINE_B} B, "
            f"ratio {size / TARGET_LINE_B:.2f}); the store {store.stat().st_size / 1e6:.1f} MB"
        )


def main() -> None:
    """Generate the inputs, measure each in its own process, print ratios to target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument(
        "--before", type=Path, help="the store part: also measure the convlab tree in this folder"
    )
    parser.add_argument(
        "--only", default="json,jsonl,folder,big,store", help="comma-separated parts"
    )
    parser.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--child-rss", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--scan-folder", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.repeat)
        return
    if args.child_rss:
        _child_rss(*args.child_rss)
        return
    if args.scan_folder:
        _scan_folder(args.scan_folder)
        return
    only = set(args.only.split(","))
    load1 = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load1:.2f} (wall time suffers above ~1)")
    with tempfile.TemporaryDirectory() as tmp:
        if "json" in only:
            suite_file = Path(tmp) / "bench.suite.json"
            make_suite_json(suite_file, args.scenarios)
            size = suite_file.stat().st_size / 1e6
            label = (
                f"JSON suite ({args.scenarios} scenarios x 2 steps, 4 assertions, {size:.1f} MB)"
            )
            _measure("json", suite_file, args.repeat, label)
        if "jsonl" in only:
            lines_file = Path(tmp) / "bench.jsonl"
            make_jsonl(lines_file, args.lines)
            size = lines_file.stat().st_size / 1e6
            _measure("jsonl", lines_file, args.repeat, f"JSONL ({args.lines} lines, {size:.1f} MB)")
            lines_file.unlink()
        if "folder" in only:
            folder = Path(tmp) / "folder"
            make_folder(folder, args.files)
            measure_folder(folder, args.files, args.repeat)
        if "big" in only:
            big = Path(tmp) / "big.jsonl"
            make_jsonl(big, args.mb * 2**20 // 104)  # the generated lines average ~104 bytes
            measure_big(big)
            big.unlink()
        if "store" in only:
            measure_store(Path(tmp), args.results, args.repeat, args.before)


if __name__ == "__main__":
    main()
