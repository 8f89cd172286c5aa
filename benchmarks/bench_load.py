"""Load benchmark: seconds and peak memory to load big suites and build `suite.df`.

    python benchmarks/bench_load.py [--scenarios 10000] [--lines 100000] [--repeat 3]

Two generated inputs, each measured in a fresh subprocess (so peak RSS is that load's own):
- a JSON evaluation suite (seed 001) of 10,000 scenarios, 2 steps each, 4 assertions per
  scenario (2 per step: about 470,000 JSON values, under the format's 500,000-value limit);
- a JSONL file (seed 002) of 100,000 cases.
Targets: JSON <= 1.0 s, JSONL <= 3.0 s, peak RSS <= 500 MB. Imports (convlab, pandas) are
done before the clock starts and reported apart; the best of `--repeat` runs is printed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = {"json": 1.0, "jsonl": 3.0}
TARGET_MB = 500.0
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
    """`lines` JSONL cases (seed 002 spelling), one per line, a few shapes mixed."""
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


def _jsonl_available() -> bool:
    code = "import importlib, sys; importlib.import_module('convlab.formats.jsonl')"
    return (
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True).returncode == 0
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


def main() -> None:
    """Generate the inputs, measure each in its own process, print ratios to target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.repeat)
        return
    load1 = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load1:.2f} (wall time suffers above ~1)")
    with tempfile.TemporaryDirectory() as tmp:
        suite_file = Path(tmp) / "bench.suite.json"
        make_suite_json(suite_file, args.scenarios)
        size = suite_file.stat().st_size / 1e6
        label = f"JSON suite ({args.scenarios} scenarios x 2 steps, 4 assertions, {size:.1f} MB)"
        _measure("json", suite_file, args.repeat, label)
        if not _jsonl_available():
            print("JSONL: jsonl loader not available (convlab/formats/jsonl.py not importable yet)")
            return
        lines_file = Path(tmp) / "bench.jsonl"
        make_jsonl(lines_file, args.lines)
        size = lines_file.stat().st_size / 1e6
        _measure("jsonl", lines_file, args.repeat, f"JSONL ({args.lines} lines, {size:.1f} MB)")


if __name__ == "__main__":
    main()
