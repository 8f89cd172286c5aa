"""Plain-text progress for terminals, CI logs and notebooks without widgets.

The layout is the one `yao agent test` prints.

A listener of engine events: a header, then each finished instance as one line (standard and
code cases) or one tree (turn-based and dynamic cases), then the summary block and, when each
case ran more than once, the stability table. Instances are printed whole when they finish,
so with `parallel > 1` the lines of two instances never interleave; on a TTY a single
progress line below them says how many are done and running.

Every total and pass rate comes from `Run.summary`: the console never counts on its own, so
it cannot disagree with the run, the reports or the notebook card.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from convlab.engine.events import (
    CaseFinished,
    CaseStarted,
    ConcurrencyChanged,
    Event,
    RunFinished,
    RunStarted,
    WorkersChanged,
)
from convlab.report._console_render import header, instance, stability_table, summary_block
from convlab.report._console_text import Glyphs, Style, clean, pick_glyphs, wants_color

__all__ = ["ConsoleProgress"]

_QUIET_HIDES = ("passed", "skipped")


class ConsoleProgress:
    """Prints a run as `yao agent test` does: header, `► [case] input… PASSED (1.2s)`, trees,
    summary.

    - `stream`: where to write (stderr by default: stdout stays free for data);
    - `verbose`: trees for every case, with passing checks too;
    - `quiet`: only the instances that did not pass, and the summary: the default in a
      notebook kernel, where a thousand lines would bury the cell's output;
    - `color`: None picks colours on a TTY unless `NO_COLOR` is set;
    - `glyphs`: "unicode" or "ascii"; None picks ASCII when the stream cannot encode Unicode;
    - `source`: the suite's path or name, shown in the header.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        verbose: bool = False,
        quiet: bool | None = None,
        *,
        color: bool | None = None,
        glyphs: str | None = None,
        source: str | None = None,
        output: str | None = None,
    ) -> None:
        self.stream: TextIO = stream or sys.stderr
        self.verbose = verbose
        self.quiet = ("ipykernel" in sys.modules) if quiet is None else quiet
        self.style = Style(wants_color(self.stream, color))
        self.glyphs: Glyphs = pick_glyphs(self.stream, glyphs)
        self.source = source
        self.output = output
        self.total = self.done = 0
        self.t0 = time.perf_counter()
        self._modes: dict[tuple[str, str, int, int], tuple[str, str | None]] = {}
        self._running: set[tuple[str, str, int, int]] = set()
        self._live = self._is_tty() and not self.quiet
        self._limit: ConcurrencyChanged | None = None
        self._drawn = False
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._started(event)
        elif isinstance(event, RunFinished):
            run, g, s = event.run, self.glyphs, self.style
            lines = summary_block(run, time.perf_counter() - self.t0, g, s, self.output)
            if self._limit is not None:  # above the summary: the banner stays the last line
                lines.insert(0, self._limit_note(self._limit, final=True))
            if int(run.settings.get("runs") or 1) > 1 and not self.quiet and run.results:
                lines = stability_table(run, g, s) + lines
            self._live = False
            self._emit(lines)
        else:
            self._instance_event(event)

    def _instance_event(self, event: Event, variant: str | None = None) -> None:
        """An instance starting or finishing, or where and how fast instances run: of the
        run, or of one `variant` of an experiment (its name before each case id)."""
        if isinstance(event, CaseStarted):
            key = _keyed(variant, event.key)
            self._modes[key] = (event.mode, event.name)
            self._running.add(key)
            self._emit([])
        elif isinstance(event, CaseFinished):
            self._finished(event, variant)
        elif isinstance(event, ConcurrencyChanged):
            self._concurrency(event)
        elif isinstance(event, WorkersChanged) and not self.quiet:  # where the instances run
            doing = "Running " if event.workers else ""  # or what gets it workers
            self._emit([f"  {doing}{clean(event.text)}"])

    def _started(self, event: RunStarted) -> None:
        self.total, self.done = event.total, event.resumed
        self.t0 = time.perf_counter()
        self._modes.clear()
        self._running.clear()
        self._limit = None
        self._live = self._is_tty() and not self.quiet  # one listener may watch several runs
        if self.quiet:
            stored = f", {event.resumed} already stored" if event.resumed else ""
            self._emit([f"convlab: {event.total} instance(s) against {clean(event.agent)}{stored}"])
            return
        self._emit(
            header(
                self.glyphs,
                self.style,
                event.agent,
                event.settings,
                event.total,
                event.resumed,
                self.source,
            )
        )

    def _concurrency(self, event: ConcurrencyChanged) -> None:
        """A TTY's progress line shows the limit while it is below `parallel`; a log gets one
        line when it is first cut (it moves with every window of requests after that)."""
        first = self._limit is None
        self._limit = event
        self._emit([self._limit_note(event)] if first and event.limit is not None else [])

    def _limit_note(self, event: ConcurrencyChanged, final: bool = False) -> str:
        where = f"{clean(event.endpoint)} answered 429/503 {event.overloads} time(s)"
        if event.limit is None:
            now = f"the in-flight limit is back at parallel={event.parallel}"
        else:
            now = f"in-flight limit {event.limit} of parallel={event.parallel}"
        if not final:
            now += " (adaptive: it grows back as requests succeed)"
        return self.style(f"{where}: {now}", "yellow")

    def _finished(self, event: CaseFinished, variant: str | None = None) -> None:
        r = event.result
        key = _keyed(variant, r.key)
        self.done += 1
        self._running.discard(key)
        mode, name = self._modes.pop(key, (None, None))
        if self.quiet and r.status in _QUIET_HIDES:
            self._emit([])
            return
        label = _keyed(variant, (event.label or r.case_id,))[0]
        self._emit(instance(r, label, mode, name, self.glyphs, self.style, self.verbose))

    def _emit(self, lines: list[str]) -> None:
        """Write whole blocks at once, under the progress line when the stream is a TTY."""
        with self._lock:
            parts = ["\r\x1b[K"] if self._drawn else []
            self._drawn = False
            parts += [line + "\n" for line in lines]
            if self._live and self.total:
                parts.append(self._progress_line())
                self._drawn = True
            if parts:
                self._write("".join(parts))

    def _progress_line(self) -> str:
        """The TTY's last line: done of total, running, the adaptive limit while it holds."""
        running = f", {len(self._running)} running" if self._running else ""
        shown = self._limit
        if shown is not None and shown.limit is not None:
            running += f", in-flight limit {shown.limit}/{shown.parallel}"
        return f"[Progress: {self.done}/{self.total} completed{running}...]"

    def _write(self, text: str) -> None:
        encoding = getattr(self.stream, "encoding", None)
        if encoding:  # never let one odd character in a reply stop the output
            try:
                text.encode(encoding)
            except (UnicodeEncodeError, LookupError):
                text = text.encode(encoding, "backslashreplace").decode(encoding, "replace")
        self.stream.write(text)
        self.stream.flush()

    def _is_tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except (ValueError, OSError):
            return False


def _keyed(variant: str | None, key: tuple[Any, ...]) -> Any:
    """An instance's key (or label) in an experiment: its variant's name before the case id."""
    return (f"{variant} · {key[0]}", *key[1:]) if variant else key
