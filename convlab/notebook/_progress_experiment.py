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

from convlab.engine.events import (
    CaseFinished,
    CaseStarted,
    CheckpointReached,
    ConcurrencyChanged,
    ExperimentEvent,
    ExperimentFinished,
    ExperimentStarted,
    RunFinished,
    RunStarted,
    TurnCompleted,
)
from convlab.htmlkit import GLYPHS, STATUS_CSS
from convlab.notebook._tree_nodes import Key, Node, node_html
from convlab.notebook.progress import LiveTree

if TYPE_CHECKING:
    from convlab.model.experiment import Experiment

__all__ = ["ExperimentTree", "variant_key"]

_ROW_COUNTS = ("passed", "failed", "error", "timeout")


def variant_key(variant: str, key: Key) -> Key:
    """An instance's key in the experiment's tree: its variant's name before the case id (the
    tree's title of the instance then reads `short · case-1 [run 2/3]`)."""
    case_id, rest = key[0], key[1:]
    return (f"{variant} · {case_id}", *rest)


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

    def __call__(self, event: ExperimentEvent) -> None:  # type: ignore[override]
        with self._lock:
            self._apply_experiment(event)
            self._dirty = True
        if isinstance(event, ExperimentStarted):
            self._start_pump()
        elif isinstance(event, ExperimentFinished):
            self.close(event.experiment)

    def _apply_experiment(self, event: ExperimentEvent) -> None:
        if isinstance(event, ExperimentStarted):
            self.variants = list(event.agents)
            self.per = {v: {} for v in self.variants}
            self.planned = event.total
            self.total = event.total * len(self.variants)
            self.runs = int(event.settings.get("runs", 1) or 1)
            self.agent = f"{len(self.variants)} variants"
            self.t0 = time.monotonic()
            return
        if isinstance(event, ExperimentFinished):
            return
        v, inner = event.variant, event.event
        if isinstance(inner, RunStarted):
            self.resumed_in[v] = inner.resumed
            self.resumed = sum(self.resumed_in.values())
        elif isinstance(inner, CaseStarted):
            key = variant_key(v, inner.key)
            self.running[key] = Node(key, inner.label)
        elif isinstance(inner, TurnCompleted | CheckpointReached):
            node = self.running.get(variant_key(v, inner.key))
            if node is None:
                return
            if isinstance(inner, TurnCompleted):
                node.turns.append(inner.turn)
            else:
                node.checkpoints[inner.checkpoint] = inner.turn
        elif isinstance(inner, CaseFinished):
            r = inner.result
            self._finished(r, inner.label, variant_key(v, r.key))
            counts = self.per.setdefault(v, {})
            counts[r.status] = counts.get(r.status, 0) + 1
        elif isinstance(inner, ConcurrencyChanged):
            self.limit = inner
        elif isinstance(inner, RunFinished):
            self.done_in.add(v)

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

    def final_bundle(self, run: Any) -> dict[str, Any]:
        """The static summary left in the cell: the experiment's card and failing instances."""
        from convlab.notebook._experiment_view import experiment_card

        experiment: Experiment | None = run
        if experiment is None:
            text = "the experiment ended without a result (see the error below)"
            head = f"<div class='convlab cl-fail'>{html.escape(text)}</div>"
            return {"text/plain": text, "text/html": head + self.snapshot_html()}
        failing = "".join(node_html(n, False, self.runs) for n in list(self.failed)[::-1])
        older = self.failed_total - len(self.failed)
        if older:
            failing += f"<div class='cl-muted'>… and {older} more (see exp.df)</div>"
        if failing:
            failing = (
                f"<div class='convlab'><div class='cl-title'>did not pass ({self.failed_total})"
                f"</div>{failing}</div>"
            )
        text, card = experiment_card(experiment)
        return {"text/plain": text, "text/html": card + failing}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data = super()._repr_mimebundle_(include, exclude)
        if "text/plain" in data and self._final is None:
            done = sum(sum(c.values()) for c in self.per.values())
            data["text/plain"] = f"convlab experiment: {done}/{self.total} instances"
        return data
