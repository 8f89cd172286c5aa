"""The command line: thin over the public API.

Exit codes: 0 everything passed (or valid), 1 failures/errors/timeouts (or invalid files
for `validate`), 2 an invalid suite or a usage error, with the message on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from convlab.errors import ConvlabError, SuiteError

__all__ = ["main"]


def _validate(args: argparse.Namespace) -> int:
    from convlab.formats import load

    problems, cases, files = [], 0, 0
    for path in args.paths:
        try:
            suite = load(path)
        except SuiteError as err:
            problems.extend(err.problems)
            continue
        cases += len(suite.cases)
        files += len(suite.sources)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        return 1
    print(f"valid: {cases} case(s) in {files} file(s)")
    return 0


SUITE_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".py")


def _is_path(text: str) -> bool:
    """A suite path (existing, or looking like one); anything else is a quick message."""
    looks = text.endswith(SUITE_SUFFIXES) or ("/" in text and " " not in text.strip())
    return Path(text).exists() or looks


def _check_options(args: argparse.Namespace) -> None:
    """Usage errors before anything runs (exit 2), not after a long run."""
    import re

    from convlab._util import parse_duration
    from convlab.analysis.io import SAVERS

    try:
        parse_duration(args.timeout)
    except ValueError as exc:
        raise ConvlabError(f"--timeout: {exc}") from None
    if args.run:
        try:
            re.compile(args.run)
        except re.error as exc:
            raise ConvlabError(f"--run: invalid regex {args.run!r}: {exc}") from None
    if args.output and Path(args.output).suffix.lower() not in SAVERS:
        supported = ", ".join(sorted(SAVERS))
        raise ConvlabError(f"-o: cannot write {args.output!r}; supported suffixes: {supported}")


def _run(args: argparse.Namespace) -> int:
    import convlab as cl
    from convlab.report.console import ConsoleProgress

    _check_options(args)
    if not _is_path(args.input):
        answer = cl.ask(args.name or "demo:expense", args.input)
        print(answer)
        return 0 if answer.passed else 1
    if not Path(args.input).exists():
        raise ConvlabError(f"{args.input}: no such file or folder")
    suite = cl.load(args.input)
    if args.run:
        suite = suite.filter(run=args.run)
        if not suite.cases:
            raise ConvlabError(f"no test cases match pattern {args.run!r}")
    if args.dry_run:
        print(suite.df.to_string(index=False))
        return 0
    if not args.name:
        raise ConvlabError(
            "give the agent to test with -n AGENT (e.g. -n demo:expense, "
            "-n openai:gpt-4o-mini, -n http://127.0.0.1:8000/chat, -n module:function)"
        )
    run = cl.run(
        suite,
        args.name,
        runs=args.runs,
        parallel=args.parallel,
        timeout=args.timeout,
        simulator=args.simulator,
        judge=args.judge,
        store=args.store,
        resume=args.resume,
        fail_fast=args.fail_fast,
        allow_external_writes=args.allow_external_writes,
        progress=ConsoleProgress(verbose=args.verbose, quiet=False),
    )
    if args.output:
        run.save(args.output)
        print(f"results written to {args.output}", file=sys.stderr)
    bad = sum(r.status in ("failed", "error", "timeout") for r in run.results)
    bad += sum(a.status in ("failed", "error") for a in run.suite_assertions)
    return 1 if bad or run.status == "cancelled" else 0


def _demo(args: argparse.Namespace) -> int:
    from convlab._demo import find_examples, run_examples

    ok, lines = run_examples(find_examples(args.path), runs=args.runs)
    print("\n".join(lines))
    print("every example ended as expected" if ok else "some examples did NOT end as expected")
    return 0 if ok else 1


def _assertions(args: argparse.Namespace) -> int:
    from convlab.checks.api import describe_kinds

    kinds = describe_kinds()
    width = max(len(k) for k, _ in kinds)
    for name, doc in kinds:
        print(f"{name.ljust(width)}  {doc}")
    return 0


def _serve_demo(args: argparse.Namespace) -> int:
    from convlab.agents.serve import main as serve_main

    argv = ["--port", str(args.port), "--latency-ms", str(args.latency_ms)]
    return int(serve_main(argv) or 0)


def _report(args: argparse.Namespace) -> int:
    """Execute a notebook (or a saved run's report notebook) and write it as .html or .ipynb."""
    from convlab._util import parse_duration
    from convlab.report.notebook import NotebookError, render_report

    try:
        timeout = parse_duration(args.timeout)
    except ValueError as exc:
        raise ConvlabError(f"--timeout: {exc}") from None
    try:
        out = render_report(args.input, args.output, timeout=timeout)
    except NotebookError as err:  # the notebook ran and failed: not a usage error
        print(f"convlab: {err}", file=sys.stderr)
        return 1
    print(f"report written to {out}", file=sys.stderr)
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="convlab", description="Evaluate conversational agents.")
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check suite files without running anything")
    v.add_argument("paths", nargs="+")
    v.set_defaults(fn=_validate)
    r = sub.add_parser("run", help="run a suite (or a quick message) against an agent")
    r.add_argument("-i", "--input", required=True, help="suite file or folder, or a message")
    r.add_argument("-n", "--name", help="agent: demo:NAME, openai:MODEL, http:URL, module:function")
    r.add_argument("-o", "--output", help="results file (.json, .jsonl)")
    r.add_argument("--runs", type=int, default=1)
    r.add_argument("--parallel", type=int, default=4)
    r.add_argument("--timeout", default="2m")
    r.add_argument("--run", help="regex: only cases whose id matches")
    r.add_argument("--fail-fast", action="store_true")
    r.add_argument("--dry-run", action="store_true", help="load and list the cases only")
    r.add_argument("--store", help="JSONL results store (every finished case appended at once)")
    r.add_argument("--resume", action="store_true", help="skip cases already in --store")
    r.add_argument("--simulator", help="user simulator agent (default: scripted)")
    r.add_argument("--judge", help="judge agent for judge assertions")
    r.add_argument("--allow-external-writes", action="store_true")
    r.add_argument("-v", "--verbose", action="store_true")
    r.set_defaults(fn=_run)
    rep = sub.add_parser("report", help="execute a notebook or a saved run into a report")
    rep.add_argument("input", help=".ipynb notebook, or a saved run (.json, .jsonl, a store)")
    rep.add_argument("-o", "--output", required=True, help="report: .html (offline) or .ipynb")
    rep.add_argument("--timeout", default="10m", help="per cell (e.g. 600, 90s, 10m)")
    rep.set_defaults(fn=_report)
    d = sub.add_parser("demo", help="run every example suite on its built-in demo agent")
    d.add_argument("path", nargs="?", help="examples folder (default: ./examples)")
    d.add_argument("--runs", type=int, default=1)
    d.set_defaults(fn=_demo)
    a = sub.add_parser("assertions", help="list the assertion kinds")
    a.set_defaults(fn=_assertions)
    s = sub.add_parser("serve-demo", help="serve the demo agents as an OpenAI-compatible API")
    s.add_argument("--port", type=int, default=8765)
    s.add_argument("--latency-ms", type=float, default=0)
    s.set_defaults(fn=_serve_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except SuiteError as err:
        print(str(err), file=sys.stderr)
        return 2
    except (ConvlabError, ValueError, ImportError) as err:
        # bad options, an agent spec that does not import, a store of another suite
        print(f"convlab: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
