"""`convlab why STORE [CASE]`: why a run's flaky cases are flaky, as text (convlab.report.why:
each case's sentence, its branches and their paths; control characters made visible)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["add_why", "why_command"]

EXAMPLE = (
    "  convlab why runs/store.jsonl                 # every flaky case\n"
    "  convlab why runs/store.jsonl expense-policy  # one case, its branches and paths"
)


def why_command(args: argparse.Namespace) -> int:
    """Print why the run's flaky cases (or one case) are flaky; 0 (it is a report)."""
    from convlab.analysis.load import load_run
    from convlab.report.why import why_text

    print(why_text(load_run(args.input), args.case))  # noqa: T201 - the command's output
    return 0


def add_why(sub: Any, make: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the `why` command to the CLI's subparsers (`make`: the CLI's subparser maker)."""
    help_ = "say why cases are flaky: where their runs fork, which branch passes"
    w = make(sub, "why", help_, EXAMPLE)
    w.add_argument("input", help="a saved run (.json, .jsonl) or a store")
    w.add_argument("case", nargs="?", help="one case id (default: every flaky case)")
    w.set_defaults(fn=why_command)
