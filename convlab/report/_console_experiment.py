"""Plain-text progress of an experiment, and its leaderboard as text.

`ExperimentConsole` is the run console (convlab.report.console) for several variants at once:
one header naming every variant, each finished instance with its variant before its case id,
a line per variant as it ends, and at the end the leaderboard and what changed in the agent.
On a TTY the progress line counts each variant apart. Every figure comes from
`Experiment.leaderboard()` and each variant's `Run.summary`.
"""

from __future__ import annotations

import textwrap
import time
from typing import TYPE_CHECKING, Any, TextIO

from convlab._readable import pct, shorten
from convlab.engine.events import (
    CaseFinished,
    ExperimentEvent,
    ExperimentFinished,
    ExperimentStarted,
    RunFinished,
    RunStarted,
    VariantEvent,
)
from convlab.model.experiment import VARIANT_COLUMN
from convlab.report._console_render import WIDTH, duration
from convlab.report._console_text import Glyphs, Style, clean
from convlab.report.console import ConsoleProgress

if TYPE_CHECKING:
    import pandas as pd

    from convlab.model.experiment import Experiment

__all__ = ["ExperimentConsole", "leaderboard_lines"]


def leaderboard_lines(lb: pd.DataFrame, g: Glyphs, s: Style) -> list[str]:
    """The leaderboard as a text table (best pass rate first; the brief columns of its
    declaration), the test in words, and each variant's agent changes against the baseline."""
    from convlab.analysis.agent_diff import change_text
    from convlab.analysis.columns import LEADERBOARD

    shown = LEADERBOARD.brief()  # the declared columns, titles and formats
    head = tuple(c.title for c in shown)
    records = [{str(k): v for k, v in r.items()} for r in lb.to_dict("records")]
    rows = [tuple(shorten(c.cell(row), 40, g.ellipsis) for c in shown) for row in records]
    right = tuple(c.right for c in shown)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def fmt(cells: tuple[str, ...]) -> str:
        out = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "  " + "  ".join(out).rstrip()

    lines = [g.light * WIDTH, " " + s("Leaderboard", "bold"), g.light * WIDTH, s(fmt(head), "bold")]
    lines += [fmt(cells) for cells in rows]
    lines += ["  " + line for line in textwrap.wrap(clean(lb.attrs.get("note", "")), WIDTH + 30)]
    by_variant: dict[str, list[str]] = {}
    for change in lb.attrs.get("changes") or []:
        by_variant.setdefault(str(change[VARIANT_COLUMN]), []).append(change_text(change))
    if by_variant:
        lines.append(f"  What changed in the agent against {clean(lb.attrs.get('baseline'))}:")
        for name, texts in by_variant.items():
            lines.append(f"    {shorten(name, 24, g.ellipsis)}: " + shorten("; ".join(texts), 200))
    return lines


class ExperimentConsole(ConsoleProgress):
    """Prints an experiment as the run console prints a run (see the module docstring)."""

    def __init__(self, stream: TextIO | None = None, verbose: bool = False, **kw: Any) -> None:
        super().__init__(stream, verbose, **kw)
        self.variants: list[str] = []
        self.done_in: dict[str, int] = {}
        self.planned = 0

    def __call__(self, event: ExperimentEvent) -> None:  # type: ignore[override]
        if isinstance(event, ExperimentStarted):
            self._experiment_started(event)
        elif isinstance(event, ExperimentFinished):
            self._experiment_finished(event.experiment)
        else:
            self._variant_event(event)

    def _experiment_started(self, event: ExperimentStarted) -> None:
        self.variants = list(event.agents)
        self.done_in = dict.fromkeys(self.variants, 0)
        self.planned = event.total
        self.total, self.done = event.total * len(self.variants), 0
        self.t0 = time.perf_counter()
        self._live = self._is_tty() and not self.quiet
        g, s = self.glyphs, self.style
        runs, parallel = event.settings.get("runs", 1), event.settings.get("parallel", 1)
        if self.quiet:
            self._emit(
                [
                    f"convlab: experiment {clean(event.name)}: {len(self.variants)} variants x "
                    f"{event.total} instance(s)"
                ]
            )
            return
        title = f"Experiment: {shorten(event.name, 40, g.ellipsis)} (Parallel: {parallel}, shared)"
        lines = [g.heavy * WIDTH, " " + s(title, "bold"), g.heavy * WIDTH]
        for name, agent in event.agents.items():
            lines.append(
                f"{s(g.info, 'blue')} {shorten(name, 24, g.ellipsis)}: {shorten(agent, 60)}"
            )
        if self.source:
            lines.append(f"{s(g.info, 'blue')} Input: {clean(self.source)}")
        lines.append(
            f"{s(g.info, 'blue')} Runs: {runs}   Instances: {event.total} per variant, "
            f"{self.total} in all"
        )
        self._emit([*lines, g.light * WIDTH])

    def _variant_event(self, event: VariantEvent) -> None:
        v, inner = event.variant, event.event
        if isinstance(inner, RunStarted):  # the experiment's header said it all
            self.done += inner.resumed
            self.done_in[v] = self.done_in.get(v, 0) + inner.resumed
            self._emit([])
        elif isinstance(inner, RunFinished):
            self._run_finished(v, inner)
        else:  # the instances: printed as the run console prints them, by variant
            if isinstance(inner, CaseFinished):
                self.done_in[v] = self.done_in.get(v, 0) + 1
            self._instance_event(inner, v)

    def _run_finished(self, v: str, event: RunFinished) -> None:
        sm = event.run.summary
        line = (
            f"{self.style(self.glyphs.info, 'blue')} {shorten(v, 24, self.glyphs.ellipsis)} ended "
            f"({event.run.status}): {sm['passed']}/{sm['total']} passed, pass rate "
            f"{pct(sm['pass_rate'])}"
        )
        if event.run.error:
            line += f"; {shorten(event.run.error, 160, self.glyphs.ellipsis)}"
        self._emit([] if self.quiet else [line])

    def _experiment_finished(self, exp: Experiment) -> None:
        g, s = self.glyphs, self.style
        lines = leaderboard_lines(exp.leaderboard(), g, s)
        took = duration(time.perf_counter() - self.t0)
        lines.append(
            f"  Duration: {took}" + (f"   Output: {clean(self.output)}" if self.output else "")
        )
        bad = {
            name: run.summary
            for name, run in exp.runs.items()
            if run.status != "completed" or run.error or _not_all_passed(run.summary)
        }
        if not bad:
            verdict = s(f"{g.cheer} EVERY VARIANT PASSED EVERYTHING {g.cheer}", "bold", "green")
        else:
            names = ", ".join(shorten(n, 24, g.ellipsis) for n in bad)
            verdict = s(f"{g.bad} NOT EVERYTHING PASSED IN: {names}", "bold", "red")
        self._live = False
        self._emit([*lines, g.heavy * WIDTH, " " + verdict, g.heavy * WIDTH])

    def _progress_line(self) -> str:
        per = ", ".join(
            f"{shorten(v, 16, self.glyphs.ellipsis)} {self.done_in.get(v, 0)}/{self.planned}"
            for v in self.variants
        )
        running = f", {len(self._running)} running" if self._running else ""
        return f"[Progress: {self.done}/{self.total} completed ({per}){running}...]"


def _not_all_passed(sm: Any) -> bool:
    return bool(sm["failed"] or sm["errors"] or sm["timeouts"] or sm["cancelled"])
