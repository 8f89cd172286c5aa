"""Plain-text progress for terminals, CI logs and notebooks without widgets.

A listener of engine events: one line per finished instance, then a summary.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from convlab.engine.events import (
    CaseFinished,
    CheckpointReached,
    Event,
    RunFinished,
    RunStarted,
    TurnCompleted,
)

__all__ = ["ConsoleProgress"]

MARKS = {
    "passed": "PASSED",
    "failed": "FAILED",
    "error": "ERROR",
    "timeout": "TIMEOUT",
    "skipped": "SKIPPED",
    "cancelled": "CANCELLED",
    "blocked": "BLOCKED",
}


class ConsoleProgress:
    """Prints `► [case] ... STATUS (1.2s)` per instance and a summary at the end.

    `quiet` prints only the instances that did not pass (and the summary): the default in
    a notebook kernel, where a thousand lines would bury the cell's output.
    """

    def __init__(
        self, stream: TextIO | None = None, verbose: bool = False, quiet: bool | None = None
    ) -> None:
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self.quiet = ("ipykernel" in sys.modules) if quiet is None else quiet
        self.total = self.done = 0
        self.t0 = time.perf_counter()

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.total, self.done = event.total, event.resumed
            self.t0 = time.perf_counter()
            extra = f", {event.resumed} already stored" if event.resumed else ""
            self._say(f"convlab: {event.total} instance(s) against {event.agent}{extra}")
        elif isinstance(event, CaseFinished):
            self.done += 1
            r = event.result
            if self.quiet and r.status in ("passed", "skipped"):
                return
            line = f"► [{event.label or r.case_id}] {MARKS.get(r.status, r.status)}"
            line += f" ({r.duration_ms / 1000:.1f}s)" if r.duration_ms else ""
            if r.status not in ("passed", "skipped") and r.error:
                line += f" - {r.error[:200]}"
            self._say(f"{line}  [{self.done}/{self.total}]")
        elif self.verbose and isinstance(event, TurnCompleted):
            t = event.turn
            said = " / ".join(m.text() for m in t.messages) or "-"
            reply = (t.observation.text if t.observation else None) or t.error or "-"
            self._say(f"  [{event.key[0]}] turn {t.index + 1}: {_clip(said)!r} -> {_clip(reply)!r}")
        elif self.verbose and isinstance(event, CheckpointReached):
            self._say(f"  [{event.key[0]}] ✓ checkpoint {event.checkpoint} (turn {event.turn})")
        elif isinstance(event, RunFinished):
            self._say(summary_line(event.run.results, time.perf_counter() - self.t0))

    def _say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary_line(results: list, seconds: float) -> str:  # type: ignore[type-arg]
    """`Total: 4  Passed: 2  Failed: 1 ... Pass rate: 66.7%` for a list of CaseResults."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    ran = sum(v for k, v in counts.items() if k not in ("skipped", "cancelled", "blocked"))
    rate = 100 * counts.get("passed", 0) / ran if ran else 0.0
    parts = [f"Total: {len(results)}"] + [
        f"{k.capitalize()}: {v}" for k, v in sorted(counts.items())
    ]
    return "  ".join(parts) + f"  Pass rate: {rate:.1f}%  Duration: {seconds:.1f}s"
