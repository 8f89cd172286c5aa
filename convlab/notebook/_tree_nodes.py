"""One instance in the live tree: its state as the events build it (`Node`) and its HTML,
drawn once a finished instance can no longer change. Every string from a file or an agent is
escaped."""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from convlab._readable import shorten
from convlab.htmlkit import GLYPHS, STATUS_CSS, css_color, location_html, traceback_html

if TYPE_CHECKING:
    from convlab.model.records import CaseResult, TurnResult

__all__ = ["WHY", "Key", "Node", "node_html"]

Key = tuple[str, str, int, int]
WHY = 100  # characters of the reason shown on an instance's line


def variant_key(variant: str | None, key: Key) -> Key:
    """An instance's key in a tree: in an experiment, its variant's name before the case id
    (the instance's title then reads `short · case-1 [run 2/3]`); else the key itself."""
    if not variant:
        return key
    case_id, rest = key[0], key[1:]
    return (f"{variant} · {case_id}", *rest)


def _args(arguments: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(arguments, ensure_ascii=False, default=str, separators=(",", ":"))
    except (TypeError, ValueError):
        text = str(arguments)
    return shorten(text, limit)


@dataclass
class Node:
    """One instance as the tree shows it; turns are kept by reference, drawn only if shown."""

    key: Key
    label: str
    status: str = "running"
    turns: list[TurnResult] = field(default_factory=list)
    checkpoints: dict[str, int | None] = field(default_factory=dict)
    result: CaseResult | None = None
    worker: str = ""
    started: float = field(default_factory=time.monotonic)
    drawn: dict[bool, str] = field(default_factory=dict)
    """A finished node's HTML (closed / open): it never changes, so it is drawn once."""


def _title(node: Node, runs: int) -> str:
    """case id [variant, repetition, run]: the instance's key as a reader names it."""
    case_id, variant, repetition, run = node.key
    bits = [variant] if variant else []
    bits += [f"rep {repetition + 1}"] if repetition else []
    bits += [f"run {run + 1}/{runs}"] if runs > 1 else []
    return case_id + (f" [{', '.join(bits)}]" if bits else "")


def _turn_html(t: TurnResult) -> str:
    e = html.escape
    said = " / ".join(m.text() for m in t.messages) or "—"
    obs = t.observation
    reply = (obs.text if obs else None) or t.error or "—"
    calls = "".join(
        f"<div class='cl-muted'>&nbsp;&nbsp;↳ <code>{e(c.name)}({e(_args(c.arguments))})</code>"
        "</div>"
        for c in (obs.tool_calls if obs else [])[:6]
    )
    bad = "".join(
        f"<div class='cl-fail'>&nbsp;&nbsp;{GLYPHS['failed']} {e(shorten(a.label or a.kind, 40))}: "
        f"{e(shorten(a.message or a.error or a.status, 160))}</div>"
        for a in t.assertions
        if a.status in ("failed", "error")
    )
    mark = "cl-fail" if t.status in ("failed", "error") else ""
    return (
        f"<li><span class='cl-who'>turn {t.index + 1}</span> "
        f"<span class='{mark}'>{e(shorten(said, 90))}</span> → {e(shorten(reply, 140))}"
        f"{calls}{bad}</li>"
    )


def _result_html(r: CaseResult) -> str:
    """Checkpoints and failed case-level assertions of a finished instance."""
    e = html.escape
    out = []
    for cp in r.checkpoints:
        where = f"reached at turn {cp.reached_at_turn}" if cp.reached else "not reached"
        where += "" if cp.required or cp.passed else " (optional)"
        cls = "cl-ok" if cp.passed else "cl-muted" if not cp.required else "cl-fail"
        out.append(f"<li class='{cls}'>checkpoint <code>{e(cp.id)}</code>: {where}</li>")
    for a in r.assertions:
        if a.status in ("failed", "error"):
            msg = shorten(a.message or a.error or a.status, 200)
            out.append(f"<li class='cl-fail'>{e(a.label or a.kind)}: {e(msg)}</li>")
    if r.status != "passed" and r.error and len(r.error) > WHY:  # the head shows short ones
        out.append(f"<li class='cl-fail'>{e(shorten(r.error, 600))}</li>")
    tb = traceback_html(r.error_info) if r.status != "passed" else ""  # the user's code raised
    return "".join(out) + (f"<li>{tb}</li>" if tb else "")


def node_html(node: Node, open_: bool, runs: int = 1, turns_shown: int = 6) -> str:
    if node.result is not None:
        if open_ not in node.drawn:
            node.drawn[open_] = _draw_node(node, open_, runs, turns_shown)
        return node.drawn[open_]
    return _draw_node(node, open_, runs, turns_shown)


def _draw_node(node: Node, open_: bool, runs: int, turns_shown: int) -> str:
    e = html.escape
    status = node.status
    color = STATUS_CSS.get(status, css_color("muted"))
    r = node.result
    took = f" ({r.duration_ms / 1000:.1f}s)" if r is not None and r.duration_ms else ""
    extra = ""
    if status == "running":
        took = f" ({time.monotonic() - node.started:.0f}s)"
        extra = "".join(
            f"<li class='cl-ok'>checkpoint <code>{e(cid)}</code> reached at turn {t}</li>"
            for cid, t in node.checkpoints.items()
        )
    turns = node.turns[-turns_shown:]
    skipped = len(node.turns) - len(turns)
    body = (f"<li class='cl-muted'>… {skipped} earlier turn(s)</li>" if skipped else "") + "".join(
        _turn_html(t) for t in turns
    )
    body += extra + (_result_html(r) if r is not None else "")
    why = f" <span class='cl-muted'>on {e(node.worker)}</span>" if node.worker else ""
    if r is not None and r.blame and r.blame != "agent":  # not counted against the agent
        why = f" <span class='cl-blame'>[blame: {e(r.blame)}]</span>"
    if r is not None and status != "passed" and r.error:
        at = location_html(r.error_info)  # where the user's code raised it
        why += f" <span class='cl-muted'>— {e(shorten(r.error, WHY))}{at}</span>"
    head = (
        f"<span style='color:{color}'>{GLYPHS.get(status, '?')} {e(status.upper())}</span> "
        f"<code>{e(_title(node, runs))}</code>{took}{why}"
    )
    if not body:
        return f"<div>{head}</div>"
    return (
        f"<details{' open' if open_ else ''}><summary>{head}</summary>"
        f"<ul class='cl-turns'>{body}</ul></details>"
    )
