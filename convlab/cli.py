"""The command line: thin over the public API.

Exit codes, the same for every command (`validate` included):

- 0: everything passed (or, for `validate`, every file is valid);
- 1: something did not pass: a failed, errored or timed-out case, a failed suite assertion,
  a failed run hook (`Run.status == "failed"`), a cancelled or interrupted run, an agent
  that could not answer `ask`, a report notebook that failed;
- 2: the input or the command line is wrong, with a message on stderr and no traceback:
  argparse errors and bad values (`--runs 0`, `--timeout abc`), an invalid suite (every
  SuiteError problem, one per line), no agent given, an agent spec that does not resolve
  (unknown scheme, a module or attribute that is not found: ImportError, a bad value:
  ValueError), an `openai:` agent with no key, any other ConvlabError raised before results,
  a file that cannot be read or written (a read-only folder, a full disk, a file-size
  limit, a path through a file): the path and the system's reason;
- 3: an unexpected exception (a bug, or user code raising something else while it is
  imported or called outside a case): its traceback is printed, never disguised as usage;
- 141: whoever read the output stopped reading (`convlab assertions | head -5`): nothing is
  printed, and the code is the one a shell gives a command that a closed pipe stopped.

An exception raised by the agent while it answers a case is recorded on that case (`error`,
exit 1), not raised.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convlab._cli_given import Given
from convlab._cli_history import HISTORY_HELP, history_arguments
from convlab._cli_run import (
    DEFAULTS,
    ask_command,
    duration,
    is_experiment,
    is_path,
    judge_pair,
    number_arg,
    positive_int,
    run_command,
)
from convlab._cli_why import add_why
from convlab.errors import ConvlabError, SuiteError, shown_problems

__all__ = ["main"]

_is_path = is_path  # the %convlab magic uses these two
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CRASH, EXIT_PIPE = 0, 1, 2, 3, 141


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
        for note in _refused_inputs(suite):
            print(note, file=sys.stderr)
    if problems:
        raise SuiteError(problems)
    print(f"valid: {cases} case(s) in {files} file(s)")
    return EXIT_OK


def _refused_inputs(suite: Any) -> list[str]:
    """Notes for step inputs that intention-kernel's direct adapter refuses when the turn is
    sent.

    The file is valid (intention-kernel accepts any JSON object as a step input), so these
    are notes, not problems: a run errs at those turns (EVALUATION_AGENT_INPUT_INVALID) only
    with an agent that is `strict_input`; any other agent receives the input as it is.
    """
    notes = []
    for case in suite.cases:
        where = str(case.source) if case.source else case.id
        for turn in case.turns:
            given = [("", turn.input)] + [(f" variant {v.id!r}", v.input) for v in turn.variants]
            notes += [
                f"note: {where}: scenario {case.id!r} step {turn.id!r}{name}: refused by a "
                f"strict_input agent (EVALUATION_AGENT_INPUT_INVALID): {inp.invalid}"
                for name, inp in given
                if inp.invalid is not None
            ]
    return notes


def _check_options(args: argparse.Namespace) -> None:
    """Usage errors before anything runs (exit 2), not after a long run."""
    import re

    from convlab._durations import parse_duration
    from convlab.analysis.io import suffixes

    try:
        parse_duration(args.timeout)
    except ValueError as exc:
        raise ConvlabError(f"--timeout: {exc}") from None
    if args.run:
        try:
            re.compile(args.run)
        except re.error as exc:
            raise ConvlabError(f"--run: invalid regex {args.run!r}: {exc}") from None
    what = "experiment" if is_experiment(args) else "run"
    if args.output and Path(args.output).suffix.lower() not in suffixes(what):
        supported = ", ".join(suffixes(what))
        an = "an experiment (several -n)" if what == "experiment" else "a run"
        raise ConvlabError(
            f"-o: cannot write {an} as {args.output!r}; supported suffixes: {supported}"
        )


def _run(args: argparse.Namespace) -> int:
    _check_options(args)
    return run_command(args)


def _demo(args: argparse.Namespace) -> int:
    from convlab._demo import find_examples, run_examples

    ok, lines = run_examples(find_examples(args.path), runs=args.runs)
    print("\n".join(lines))
    print("every example ended as expected" if ok else "some examples did NOT end as expected")
    return EXIT_OK if ok else EXIT_FAILED


def _assertions(args: argparse.Namespace) -> int:
    from convlab.checks.api import describe_kinds

    kinds = describe_kinds()
    width = max(len(k) for k, _ in kinds)
    for name, doc in kinds:
        print(f"{name.ljust(width)}  {doc}")
    return EXIT_OK


def _serve_demo(args: argparse.Namespace) -> int:
    from convlab.agents.serve import main as serve_main

    argv = ["--port", str(args.port), "--latency-ms", str(args.latency_ms)]
    return int(serve_main(argv) or 0)


def _report(args: argparse.Namespace) -> int:
    """Execute a notebook (or a saved run's report notebook) and write it as .html or .ipynb."""
    from convlab._durations import parse_duration
    from convlab.report.notebook import NotebookError, render_report

    try:
        timeout = parse_duration(args.timeout)
    except ValueError as exc:
        raise ConvlabError(f"--timeout: {exc}") from None
    try:
        out = render_report(args.input, args.output, timeout=timeout)
    except NotebookError as err:  # the notebook ran and failed: not a usage error
        print(f"convlab: {err}", file=sys.stderr)
        return EXIT_FAILED
    print(f"report written to {out}", file=sys.stderr)
    return EXIT_OK


_port = number_arg(int, 0, 65535, bad="expected a port number, got {text!r}", rule="0..65535")
_non_negative = number_arg(float, 0.0, bad="expected a number, got {text!r}", rule=">= 0")
_byte_count = number_arg(
    int, 0, bad="expected a whole number of bytes, got {text!r}", rule=">= 0 (0: no cap)"
)


def _demo_models() -> str:
    """The model names `serve-demo` answers to, from the demo agents' registry."""
    from convlab.agents.demos import names

    return ", ".join(f"demo:{name}" for name in names())


def _sub(sub: Any, name: str, help: str, epilog: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=help[:1].upper() + help[1:] + ".",
        epilog="example:\n" + epilog.strip("\n"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="convlab",
        description="Evaluate conversational agents.",
        epilog=(
            "example:\n  convlab run -i examples/expense -n demo:expense -o report.html\n\n"
            "exit codes: 0 all passed, 1 something did not pass, 2 invalid suite, usage or a file"
            " that cannot be read or written,"
            " 3 unexpected error (traceback printed), 141 the reader closed the pipe (| head)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    v = _sub(
        sub,
        "validate",
        "check suite files without running anything",
        "  convlab validate examples/          # 0 valid, 2 invalid (problems on stderr)",
    )
    v.add_argument("paths", nargs="+", help="suite files or folders")
    v.set_defaults(fn=_validate)
    r = _sub(
        sub,
        "run",
        "run a suite (or a quick message) against an agent",
        "  convlab run -i examples/expense -n demo:expense -o report.html\n"
        "  convlab run -i examples/finance -n demo:finance --runs 3 --run 'convfinqa-.*'\n"
        "  convlab run -i examples/expense -n a=demo:expense -n b=mymod:agent --runs 3 -o x.json\n"
        '  convlab run -i "I want to submit an expense" -n demo:expense\n'
        "without -o, results go to output-{timestamp}.jsonl beside the input; without -n,\n"
        "the agent comes from a convlab.yaml beside the input (agent: SPEC) or the suite's\n"
        "HoloDeck model (openai:NAME, needs OPENAI_API_KEY; OPENAI_BASE_URL for another\n"
        "endpoint). Several -n run one experiment (all variants under one --parallel): the\n"
        "leaderboard is printed at the end, -o takes .json (default), .html or .md, --store\n"
        "OUT.jsonl keeps a store per variant (OUT.VARIANT.jsonl), and the exit code is 1\n"
        "unless every variant passed everything",
    )
    r.add_argument("-i", "--input", required=True, help="suite file or folder, or a message")
    r.add_argument(
        "-n",
        "--name",
        action="append",
        metavar="[VARIANT=]AGENT",
        help="agent: demo:NAME, openai:MODEL, http:URL, module:function; repeat it (or name "
        "one, short=openai:gpt-4o-mini) to run every variant as one experiment",
    )
    r.add_argument(
        "--experiment", metavar="NAME", help="the experiment's name (makes even one -n one)"
    )
    r.add_argument("-o", "--output", help="results: .json, .jsonl, .md, .html, .xml, .ipynb")
    r.add_argument(
        "--runs", type=positive_int, default=DEFAULTS["runs"], action=Given, help="default 1"
    )
    r.add_argument(
        "--parallel",
        type=positive_int,
        default=DEFAULTS["parallel"],
        action=Given,
        help="cases in flight (default 4)",
    )
    r.add_argument(
        "--timeout",
        type=duration,
        default=DEFAULTS["timeout"],
        action=Given,
        help="per case: 90, 30s, 2m (default 2m)",
    )
    r.add_argument("--run", help="regex: only cases whose id matches")
    r.add_argument("--fail-fast", action="store_true")
    r.add_argument("--dry-run", action="store_true", help="load and list the cases only")
    r.add_argument("--store", help="JSONL results store (every finished case appended at once)")
    r.add_argument("--resume", action="store_true", help="skip cases already in --store")
    r.add_argument(
        "--overwrite",
        action="store_true",
        help="replace --store when it holds an earlier run of this suite",
    )
    r.add_argument("--simulator", help="user simulator agent (default: scripted)")
    r.add_argument("--judge", help="judge agent for judge assertions")
    r.add_argument(
        "--judges",
        metavar="ID=SPEC",
        type=judge_pair,
        action="append",
        help="the agent for an assertion's id, e.g. agents:validator=openai:gpt-4o-mini "
        "(Yao's `use`); repeatable",
    )
    r.add_argument("--before", metavar="HOOK", help="module:function called with the suite first")
    r.add_argument("--after", metavar="HOOK", help="module:function called with the Run at the end")
    r.add_argument(
        "--no-adaptive",
        dest="adaptive",
        action=Given,
        nargs=0,
        const=False,
        default=DEFAULTS["adaptive"],
        help="keep --parallel requests in flight even when the endpoint answers 429/503 "
        "(default: cut them, then grow back; also `adaptive: false` in convlab.yaml)",
    )
    r.add_argument(
        "--max-reply-bytes",
        type=_byte_count,
        default=1_000_000,
        metavar="N",
        help="cut a longer reply text to N UTF-8 bytes, marked on its turn (default 1000000; "
        "0: no cap)",
    )
    r.add_argument("--allow-external-writes", action="store_true")
    r.add_argument(
        "--max-cases",
        type=positive_int,
        help="most case instances; more is an error (default: 1000 for JSON suites)",
    )
    r.add_argument(
        "--cache",
        choices=("record", "replay", "auto"),
        action=Given,
        help="record agent/simulator/judge calls, replay them (no network, no key), or auto",
    )
    r.add_argument(
        "--cache-dir",
        metavar="DIR",
        action=Given,
        help="recordings folder (default ./convlab-cache)",
    )
    r.add_argument(
        "--executor",
        choices=("local", "ray"),
        action=Given,
        help="where instances run: here (default) or on Ray (pip install 'convlab[ray]')",
    )
    r.add_argument(
        "--ray-address",
        metavar="ADDR",
        action=Given,
        help="join this Ray cluster (auto, HOST:PORT, ray://HOST:PORT); implies --executor ray",
    )
    r.add_argument(
        "--no-history",
        dest="history",
        action=Given,
        nargs=0,
        const=False,
        default=DEFAULTS["history"],
        help="do not record this run in the history database (`convlab history` lists them; "
        "also `history: false` in convlab.yaml)",
    )
    r.add_argument(
        "--history-keep",
        type=positive_int,
        default=DEFAULTS["history_keep"],
        action=Given,
        metavar="N",
        help=f"keep the newest N runs in the history, deleting older ones (default "
        f"{DEFAULTS['history_keep']}; also `history_keep: N` in convlab.yaml)",
    )
    r.add_argument("-v", "--verbose", action="store_true")
    r.set_defaults(fn=_run)
    k = _sub(
        sub,
        "ask",
        "send one message to an agent and check the reply",
        '  convlab ask demo:expense "I want to submit an expense" --assert contains:expense\n'
        "--assert takes a shorthand (contains:TEXT, regex:RE, tool:NAME, json, judge:QUESTION)\n"
        "or a JSON/YAML assertion; exit 0 if every assertion passed, else 1",
    )
    k.add_argument("agent", help="demo:NAME, openai:MODEL, http:URL, module:function")
    k.add_argument("message", help="the user message")
    k.add_argument("--assert", dest="asserts", action="append", metavar="SPEC", default=[])
    k.add_argument("--judge", help="judge agent for judge assertions")
    k.set_defaults(fn=ask_command)
    rep = _sub(
        sub,
        "report",
        "execute a notebook or a saved run into a report",
        "  convlab report output-20260101120000.jsonl -o report.html",
    )
    rep.add_argument("input", help=".ipynb notebook, or a saved run (.json, .jsonl, a store)")
    rep.add_argument(
        "-o",
        "--output",
        required=True,
        help=".html (offline) or .ipynb; a saved run also .json, .jsonl, .md, .xml",
    )
    rep.add_argument("--timeout", type=duration, default="10m", help="per cell (90s, 10m)")
    rep.set_defaults(fn=_report)
    d = _sub(
        sub,
        "demo",
        "run every example suite on its built-in demo agent",
        "  convlab demo examples/    # 0 when every example ends as examples/expected.yaml says",
    )
    d.add_argument("path", nargs="?", help="examples folder (default: ./examples)")
    d.add_argument("--runs", type=positive_int, default=1)
    d.set_defaults(fn=_demo)
    history_arguments(_sub(sub, "history", "list the recorded runs, newest first", HISTORY_HELP))
    add_why(sub, _sub)
    a = _sub(sub, "assertions", "list the assertion kinds", "  convlab assertions | grep json")
    a.set_defaults(fn=_assertions)
    s = _sub(
        sub,
        "serve-demo",
        "serve the demo agents as an OpenAI-compatible API",
        "  convlab serve-demo --port 8765 &\n"
        "  OPENAI_BASE_URL=http://127.0.0.1:8765/v1 convlab ask openai:demo:expense hello\n\n"
        f"models served (a request's `model`; `demo:` is optional):\n  {_demo_models()}",
    )
    s.add_argument("--port", type=_port, default=8765)
    s.add_argument("--latency-ms", type=_non_negative, default=0)
    s.set_defaults(fn=_serve_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (see the module docstring)."""
    try:  # usage errors: argparse's message and 2 (0 after --help)
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        code = int(args.fn(args))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_left()
    except SuiteError as err:
        print(shown_problems(err.problems) or str(err), file=sys.stderr)
        return EXIT_USAGE
    except ConvlabError as err:
        print(f"convlab {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:  # a file that cannot be read or written: read-only, full, a folder
        where = f"{err.filename}: " if err.filename else ""
        print(f"convlab {args.command}: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILED
    except Exception:
        traceback.print_exc()
        print(f"convlab {args.command}: unexpected error (exit code 3)", file=sys.stderr)
        return EXIT_CRASH


def _reader_left() -> int:
    """The reader of stdout closed it: stop quietly (no "Broken pipe"), with the exit code a
    shell gives a command SIGPIPE stopped. Later writes, and the interpreter's last flush of
    stdout, go to the null device, so Python prints nothing at exit either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_PIPE


if __name__ == "__main__":
    sys.exit(main())
