"""Plain-text progress of an experiment, and its leaderboard as text.

`ExperimentConsole` is the run console (convlab.report.console) for several variants at once:
one header naming every variant, each finished instance with its variant before its case id,
a line per variant as it ends, and at the end the leaderboard and what changed in the agent.
On a TTY the progress line counts each variant apart. Every figure comes from
`Experiment.leaderboard()` and each variant's `Run.summary`.
"""

from __future__ import annotations

import math
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


def _num(value: Any, fmt: str, missing: str = "n/a") -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return missing
    return missing if math.isnan(number) else format(number, fmt)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in r.items()} for r in df.to_dict("records")]


def _ms(value: Any) -> str:
    """`120ms`, `3.4ms` below 10 ms, `n/a`."""
    text = _num(value, ".1f" if _num(value, ".1f") != "n/a" and float(value) < 10 else ",.0f")
    return text if text == "n/a" else text + "ms"


def _usd(value: Any) -> str:
    """`$0.0123`, `$0.000010` below a cent, `n/a` when unknown."""
    shown = _num(value, ",.4f")
    if shown == "n/a":
        return shown
    return f"${_num(value, '.6f')}" if float(value) < 0.01 else f"${shown}"


def _versus(row: dict[str, Any]) -> str:
    if row["baseline"]:
        return "baseline"
    better, worse = row["better"], row["worse"]
    cases = f"{int(better)} better, {int(worse)} worse"
    return f"{cases}; p_holm {_num(row['p_holm'], '.2g')}"


def leaderboard_lines(lb: pd.DataFrame, g: Glyphs, s: Style) -> list[str]:
    """The leaderboard as a text table (best pass rate first), the test in words, and each
    variant's agent changes against the baseline."""
    from convlab.analysis.agent_diff import change_text

    versus = f"vs {shorten(lb.attrs.get('baseline', ''), 20, g.ellipsis)}"
    head = ("Variant", "Pass rate", "95% CI", "Stable", "Tokens", "Cost", "p50", "p95", versus)
    rows: list[tuple[str, ...]] = []
    for row in _records(lb):
        stable = f"{row['stable']}/{row['cases']}"
        rows.append(
            (
                shorten(row[VARIANT_COLUMN], 24, g.ellipsis),
                pct(row["pass_rate"]),
                f"{pct(row['ci_low'])}-{pct(row['ci_high'])}",
                stable,
                _num(row["total_tokens"], ",.0f", "-"),
                _usd(row["cost_usd"]),
                _ms(row["latency_p50_ms"]),
                _ms(row["latency_p95_ms"]),
                _versus(row),
            )
        )
    right = (False, True, True, True, True, True, True, True, False)
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
