"""`run.plot.divergence(case_id)`: where a case's runs fork, as a Sankey diagram.

The case's prefix tree (convlab.analysis.divergence) is drawn left to right: the first node
is every run up to the first fork, each later node a branch from its fork turn to the next
fork or the end, and the last two nodes say how many passed. A node's height is the runs that
took it, its colour the stability band of its pass rate (the palette of every other chart),
and its hover the branch's path in words, the runs and the passes. Labels sit beside the
nodes in the chart's ink, so they keep their contrast in light and dark.

Every label and hover text is escaped: paths quote what a simulated user said.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convlab._readable import pct
from convlab.analysis.divergence import (
    CaseTree,
    Node,
    case_trees,
    known_case,
    path_words,
    step_words,
)
from convlab.analysis.stats import stability_word
from convlab.analysis.why import case_why
from convlab.htmlkit import STATUS_COLORS
from convlab.notebook._charts_base import base_layout, esc, new_figure, short, stability_color
from convlab.notebook._charts_run import empty_figure

if TYPE_CHECKING:
    from convlab.model.run import Run

__all__ = ["divergence"]

_LABEL = 44
"""How much of a branch's step a node label shows (the hover has the whole path)."""


@dataclass(slots=True)
class _Segment:
    """Runs that went one way from `first` (a fork's branch, or the root) to `last` (the
    next fork, or the end)."""

    first: Node
    last: Node
    parent: int | None


def _segments(tree: CaseTree) -> list[_Segment]:
    out: list[_Segment] = []

    def walk(first: Node, parent: int | None) -> None:
        last = first
        while len(last.children) == 1:
            last = last.children[0]
        out.append(_Segment(first, last, parent))
        me = len(out) - 1
        for child in last.children:
            walk(child, me)

    walk(tree.root, None)
    return out


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _label(seg: _Segment) -> str:
    node = seg.first
    rate = pct(100 * node.passed / node.runs if node.runs else float("nan"))
    if node.turn < 0:
        return f"all {node.runs} runs · {rate} passed"
    return f"turn {node.turn + 1}: {short(step_words(node), _LABEL)} · {node.runs} runs · {rate}"


def _hover(seg: _Segment) -> str:
    node = seg.first
    head = "every run" if node.turn < 0 else f"branch at turn {node.turn + 1}"
    way = esc(path_words(seg.last)).replace(" → ", "<br>→ ")
    return f"<b>{head}</b><br>{way}<br>{node.passed} of {node.runs} runs passed"


def divergence_figure(tree: CaseTree) -> Any:
    """The Sankey of one case's tree."""
    segs = _segments(tree)
    words = [stability_word(s.first.runs, s.first.passed) for s in segs]
    colors = [stability_color(w) for w in words]
    passed_at, failed_at = len(segs), len(segs) + 1
    labels = [_label(s) for s in segs] + [
        f"passed: {tree.passed}",
        f"did not pass: {tree.runs - tree.passed}",
    ]
    hovers = [_hover(s) for s in segs] + ["runs that passed", "runs that did not pass"]
    colors += [STATUS_COLORS["passed"], STATUS_COLORS["failed"]]
    source, target, value, link_colors = [], [], [], []
    for i, seg in enumerate(segs):
        if seg.parent is not None:
            source.append(seg.parent)
            target.append(i)
            value.append(seg.first.runs)
            link_colors.append(_rgba(colors[i], 0.35))
        if not seg.last.children:  # a whole path: where its runs ended up
            for at, count in (
                (passed_at, seg.last.passed),
                (failed_at, seg.last.runs - seg.last.passed),
            ):
                if count:
                    source.append(i)
                    target.append(at)
                    value.append(count)
                    link_colors.append(_rgba(colors[at], 0.35))
    trace = {
        "type": "sankey",
        "arrangement": "snap",
        "valueformat": "d",
        "node": {
            "label": labels,
            "color": colors,
            "customdata": hovers,
            "hovertemplate": "%{customdata}<extra></extra>",
            "pad": 18,
            "thickness": 18,
            "line": {"color": "white", "width": 0.5},
        },
        "link": {
            "source": source,
            "target": target,
            "value": value,
            "color": link_colors,
            "hovertemplate": "%{value} runs<extra></extra>",
        },
    }
    title = f"Where the runs of {short(tree.case_id)} fork"
    layout = base_layout(title, esc(case_why(tree)))
    height = max(260, 60 + 34 * len(segs))
    return new_figure([trace], layout, height)


def divergence(run: Run, case_id: str) -> Any:
    """`run.plot.divergence(case_id)`: the case's runs as a Sankey from the first turn to
    passed / did not pass; an empty chart says so when no run counted."""
    known_case(run, case_id)
    tree = case_trees(run, case_id).get(case_id)
    if tree is None:
        title = f"Where the runs of {short(case_id)} fork"
        return empty_figure(title, "No run of this case reached a verdict that counts.")
    return divergence_figure(tree)
