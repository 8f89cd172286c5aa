"""The live tree of an experiment: the run tree of convlab.notebook.progress for every variant
at once, with a row of counts per variant under the totals.

Each variant's instances are keyed apart (the variant's name before the case id), so the
running, failing and recent lists mix the variants and say whose each instance is. When the
experiment ends the tree gives way to the experiment's card (the leaderboard).
"""

from __future__ import annotations

import html
import time
from typing import TYPE_CHECKING, Any

from convlab.engine import events as ev
from convlab.htmlkit import GLYPHS, STATUS_CSS
from convlab.notebook.progress import LiveTree

if TYPE_CHECKING:
    pass

__all__ = ["ExperimentTree"]

_ROW_COUNTS = ("passed", "failed", "error", "timeout")


class ExperimentTree(LiveTree):
    """An engine listener of experiment events (`ExperimentEvent`) drawing the live tree."""

    def __init__(self, interval: float = 0.1) -> None:
        self.variants: list[str] = []
        self.per: dict[str, dict[str, int]] = {}
        """Finished instances per variant, by status."""
        self.planned = 0
        """Instances per variant."""
        self.resumed_in: dict[str, int] = {}
        self.done_in: set[str] = set()
        super().__init__(interval)

    def _apply(self, event: Any, variant: str | None = None) -> None:
        """Take in an experiment's event; a variant's instances go to the run tree's."""
        if variant is not None:  # one variant's instance (from below): the run tree's
            super()._apply(event, variant)
            return
        if isinstance(event, ev.ExperimentStarted):
            self.variants = list(event.agents)
            self.per = {v: {} for v in self.variants}
            self.planned = event.total
            self.total = event.total * len(self.variants)
            self.runs = int(event.settings.get("runs", 1) or 1)
            self.agent = f"{len(self.variants)} variants"
            self.t0 = time.monotonic()
            return
        if not isinstance(event, ev.VariantEvent):
            return
        v, inner = event.variant, event.event
        if isinstance(inner, ev.RunStarted):  # the experiment's totals, not one variant's
            self.resumed_in[v] = inner.resumed
            self.resumed = sum(self.resumed_in.values())
        elif isinstance(inner, ev.RunFinished):
            self.done_in.add(v)
        else:  # the instances: drawn by the run tree, keyed by variant
            if isinstance(inner, ev.CaseFinished):
                counts = self.per.setdefault(v, {})
                counts[inner.result.status] = counts.get(inner.result.status, 0) + 1
            self._apply(inner, v)

    def _header_html(self) -> str:
        return super()._header_html() + self._variants_html()

    def _variants_html(self) -> str:
        """One row of counts per variant: done of planned, each status, running."""
        e = html.escape
        running: dict[str, int] = {}
        for key in self.running:
            name = key[0].split(" · ", 1)[0]
            running[name] = running.get(name, 0) + 1
        head = "".join(
            f"<th style='color:{STATUS_CSS[k]}'>{GLYPHS[k]} {k}</th>" for k in _ROW_COUNTS
        )
        rows = []
        for v in self.variants:
            counts = self.per.get(v, {})
            done = sum(counts.values()) + self.resumed_in.get(v, 0)
            cells = "".join(
                f"<td style='color:{STATUS_CSS[k]}'>{counts.get(k, 0)}</td>" for k in _ROW_COUNTS
            )
            state = "done" if v in self.done_in else f"{running.get(v, 0)} running"
            rows.append(
                f"<tr><td><code>{e(v)}</code></td><td><b>{done}</b>/{self.planned}</td>{cells}"
                f"<td class='cl-muted'>{state}</td></tr>"
            )
        return (
            "<div class='convlab'><table class='cl-small cl-variants'><thead><tr><th>variant</th>"
            f"<th>done</th>{head}<th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            "</div>"
        )

    WHAT = "experiment"

    def card(self, run: Any) -> tuple[str, str]:
        """The experiment's card (the leaderboard), which the tree gives way to."""
        from convlab.notebook._experiment_view import experiment_card

        return experiment_card(run)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data = super()._repr_mimebundle_(include, exclude)
        if "text/plain" in data and self._final is None:
            done = sum(sum(c.values()) for c in self.per.values())
            data["text/plain"] = f"convlab experiment: {done}/{self.total} instances"
        return data
