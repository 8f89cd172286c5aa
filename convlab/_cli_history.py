"""`convlab history`: the recorded runs as a table (id, when, suite, agent, pass rate, cost),
or as JSON lines with `--json`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from convlab._history.row import CLI_TABLE, FRAME_COLUMNS, WHEN_GIVEN, title
from convlab._readable import cost, is_missing, pct, shorten
from convlab.model.codec import json_cell

__all__ = ["history_command", "history_lines"]

_WIDTHS = {"suite": 28, "agent": 32, "experiment": 16, "variant": 16}
"""The widest a text column gets (longer values are cut, ending in …)."""


def _when(value: Any) -> str:
    """A timestamp in this machine's time zone, to the minute."""
    return str(value.to_pydatetime().astimezone().strftime("%Y-%m-%d %H:%M"))


def _cell(name: str, value: Any) -> str:
    if name == "pass_rate":
        return pct(value)
    if name == "cost_usd":
        return cost(value)
    if is_missing(value):
        return ""
    if name == "started_at":
        return _when(value)
    return shorten(value, _WIDTHS.get(name, 24))


def history_lines(frame: Any) -> list[str]:
    """The text table of a history frame: a header, then a line per run."""
    if frame.empty:
        return []
    columns = [c for c in CLI_TABLE if c not in WHEN_GIVEN or frame[c].notna().any()]
    rows = [[_cell(c, r[c]) for c in columns] for r in frame.to_dict("records")]
    head = [title(c) for c in columns]
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    right = {"id", "total", "pass_rate", "cost_usd"}

    def line(cells: list[str]) -> str:
        parts = [
            cell.rjust(w) if c in right else cell.ljust(w)
            for c, cell, w in zip(columns, cells, widths, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return [line(head), *(line(r) for r in rows)]


def history_command(args: argparse.Namespace) -> int:
    """`convlab history [--suite S] [--limit N] [--experiment E] [--json]`, or `convlab
    history --prune [--keep N]`; 0, or 2 when the database cannot be read (the message names
    it and what to do)."""
    import sys

    from convlab._history import db_path, past_runs, prune

    if args.prune:
        gone = prune(args.keep)
        print(f"deleted {gone} of the oldest runs from {db_path()} (kept the newest {args.keep})")  # noqa: T201
        return 0
    frame = past_runs(args.suite, args.limit, args.experiment)
    if args.json:
        for record in frame.to_dict("records"):
            data = {k: json_cell(record[k]) for k in FRAME_COLUMNS}
            print(json.dumps(data, ensure_ascii=False, default=str))  # noqa: T201 - the CLI's output
        return 0
    lines = history_lines(frame)
    if not lines:
        which = f" of {args.suite!r}" if args.suite else ""
        print(f"no recorded runs{which} in {db_path()}", file=sys.stderr)  # noqa: T201
        return 0
    print("\n".join(lines))  # noqa: T201 - the CLI's output
    return 0
