"""`yao agent test`'s console layout as lists of lines: header, one instance, summary, stability.

Pure functions of results and settings, so the listener in `console.py` only decides WHEN
to print; every number in the summary comes from `Run.summary` (never recounted here).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from convlab._readable import pct, shorten
from convlab.analysis.frames import cost_line
from convlab.report._console_text import Glyphs, Style, clean

if TYPE_CHECKING:
    from convlab.model.records import AssertionResult, CaseResult, ErrorInfo, TurnResult
    from convlab.model.run import Run

__all__ = ["WIDTH", "header", "instance", "stability_table", "summary_block"]

WIDTH = 63
"""The width of the rules `yao agent test` prints."""
TREE_MODES = ("turns", "dynamic")
NOT_PASSING = ("failed", "error", "timeout", "cancelled", "blocked")

Node = tuple[str, list[str]]
"""A tree item: its line and its children's lines."""


def _rule(g: Glyphs, heavy: bool = False) -> str:
    return (g.heavy if heavy else g.light) * WIDTH


def _banner(g: Glyphs, s: Style, title: str, heavy: bool) -> list[str]:
    return [_rule(g, heavy), " " + s(title, "bold"), _rule(g, heavy)]


def duration(seconds: float) -> str:
    """`2.7s`, or `1.8m` past a minute (as `yao agent test` prints them)."""
    return f"{seconds:.1f}s" if seconds < 60 else f"{seconds / 60:.1f}m"


def header(
    g: Glyphs,
    s: Style,
    agent: str,
    settings: Mapping[str, Any],
    total: int,
    resumed: int,
    source: str | None,
) -> list[str]:
    """The block before the first instance: what runs, against what, how many times."""
    runs, parallel = int(settings.get("runs") or 1), int(settings.get("parallel") or 1)
    title = "Agent Test" + (f" (Parallel: {parallel})" if parallel > 1 else "")
    info = s(g.info, "blue")
    lines = _banner(g, s, title, heavy=True)
    lines.append(f"{info} Agent: {clean(agent)}")
    if source:
        lines.append(f"{info} Input: {clean(source)}")
    lines.append(f"{info} Runs: {runs}   Parallel: {parallel}")
    if settings.get("timeout_s"):
        lines.append(f"{info} Timeout: {duration(float(settings['timeout_s']))}")
    stored = f" ({resumed} already stored)" if resumed else ""
    lines.append(f"{info} Instances: {total}{stored}")
    running = "Running Tests" + (f" ({parallel} parallel)" if parallel > 1 else "")
    return lines + _banner(g, s, running, heavy=False)


def _said(turn: TurnResult) -> str:
    users = [m for m in turn.messages if m.role == "user"] or turn.messages
    text = " / ".join(m.text() for m in users)
    if not text and turn.input is not None:
        text = turn.input.text or (
            turn.input.selection.model_dump_json() if turn.input.selection else ""
        )
    return text


def _files(turn: TurnResult, g: Glyphs) -> str:
    names = [PurePath(f.path).name or f.path for f in turn.input.files] if turn.input else []
    return "".join(f" + [{shorten(n, 30, g.ellipsis)}]" for n in names)


def _reply(turn: TurnResult) -> str:
    obs = turn.observation
    if obs is None:
        return turn.error or ""
    return obs.text or obs.error or turn.error or ""


def _quote(text: str, limit: int, g: Glyphs) -> str:
    return f'"{shorten(text, limit, g.ellipsis)}"' if text else "(nothing)"


def _check(a: AssertionResult, g: Glyphs, s: Style) -> str:
    mark = s(g.ok, "green") if a.passed else s(g.bad, "red")
    name = a.label or a.id or a.kind
    why = a.error or a.message
    return f"{mark} {shorten(name, 40, g.ellipsis)}" + (
        f": {shorten(why, 120, g.ellipsis)}{_at(a.error_info)}" if why else ""
    )


def _at(info: ErrorInfo | None) -> str:
    """` (at my_agent.py:12 in reply)`: where the user's code raised; '' when it did not."""
    return f" (at {clean(info.location)})" if info is not None and info.location else ""


def _args(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(arguments)


def _turn_node(r: CaseResult, t: TurnResult, g: Glyphs, s: Style, verbose: bool) -> Node:
    n = t.index + 1
    step = (
        f" [{shorten(t.step_id, 20, g.ellipsis)}]"
        if t.step_id and t.step_id != str(t.index)
        else ""
    )
    line = (
        f"Turn {n}{step}: {_quote(_said(t), 40, g)}{_files(t, g)} {g.arrow} "
        f"{_quote(_reply(t), 48, g)}"
    )
    kids: list[str] = []
    for call in t.observation.tool_calls if t.observation else []:
        tail = f" {s(g.bad, 'red')} {shorten(call.error, 60, g.ellipsis)}" if call.error else ""
        kids.append(
            f"tool: {shorten(call.name, 40, g.ellipsis)}"
            f"({shorten(_args(call.arguments), 60, g.ellipsis)}){tail}"
        )
    kids += [_check(a, g, s) for a in t.assertions if verbose or not a.passed]
    if t.error and not (t.observation and t.observation.error == t.error):
        kids.append(
            f"{s(g.bad, 'red')} error: {shorten(t.error, 160, g.ellipsis)}{_at(t.error_info)}"
        )
    for cp in r.checkpoints:
        if cp.reached and cp.reached_at_turn == n:
            kids.append(f"{s(g.ok, 'green')} checkpoint: {shorten(cp.id, 60, g.ellipsis)}")
    return line, kids


def _tree(nodes: Sequence[Node], g: Glyphs, indent: str = "  ") -> list[str]:
    lines: list[str] = []
    for i, (line, kids) in enumerate(nodes):
        last = i == len(nodes) - 1
        lines.append(f"{indent}{g.elbow if last else g.tee} {line}")
        pad = indent + ("  " if last else g.bar) + " "
        lines += [
            f"{pad}{g.elbow if j == len(kids) - 1 else g.tee} {k}" for j, k in enumerate(kids)
        ]
    return lines


def _tail_nodes(r: CaseResult, g: Glyphs, s: Style, verbose: bool) -> list[Node]:
    """What the instance's turns do not show: unreached checkpoints, case checks, the error."""
    nodes: list[Node] = []
    for cp in r.checkpoints:
        if not cp.reached:
            why = f" ({shorten(cp.message, 100, g.ellipsis)})" if cp.message else ""
            opt = "" if cp.required else " (optional)"
            nodes.append(
                (
                    f"{s(g.bad, 'red')} checkpoint: {shorten(cp.id, 60, g.ellipsis)} "
                    f"not reached{opt}{why}",
                    [],
                )
            )
    nodes += [(_check(a, g, s), []) for a in r.assertions if verbose or not a.passed]
    checks = [a for t in r.turns for a in t.assertions] + list(r.assertions)
    if r.status != "passed" and _adds(r.error, checks, [t.error for t in r.turns]):
        nodes.append((_error_line(r, g, s), []))
    return nodes


def _error_line(r: CaseResult, g: Glyphs, s: Style) -> str:
    """The instance's error, and where the user's code raised it."""
    return f"{s(g.bad, 'red')} {shorten(r.error or '', 200, g.ellipsis)}{_at(r.error_info)}"


def _adds(
    error: str | None, checks: Sequence[AssertionResult], errors: Sequence[str | None]
) -> bool:
    """Whether the instance's error says more than the failed checks and turn errors shown."""
    if not error:
        return False
    shown = [a.error or a.message for a in checks if not a.passed] + list(errors)
    return not any(text and text in error for text in shown)


def _status_tail(r: CaseResult) -> str:
    parts = []
    if r.turns:
        parts.append(f"{len(r.turns)} turn" + ("s" if len(r.turns) != 1 else ""))
    if r.checkpoints:
        reached = sum(cp.reached for cp in r.checkpoints)
        parts.append(f"{reached}/{len(r.checkpoints)} checkpoints")
    return ((" - " + ", ".join(parts)) if parts else "") + _blamed(r)


def _blamed(r: CaseResult) -> str:
    """` [blame: judge]` for a non-pass that is not the agent's (the agent's is the norm)."""
    return f" [blame: {r.blame}]" if r.blame and r.blame != "agent" else ""


def instance(
    r: CaseResult,
    label: str,
    mode: str | None,
    name: str | None,
    g: Glyphs,
    s: Style,
    verbose: bool = False,
) -> list[str]:
    """One finished instance: a line (standard, code), or a tree (turn-based, dynamic)."""
    took = f" ({duration(r.duration_ms / 1000)})" if r.duration_ms else ""
    head = f"{s(g.case, 'cyan')} [{shorten(label or r.case_id, 60, g.ellipsis)}]"
    tree = mode in TREE_MODES or (mode is None and (bool(r.checkpoints) or len(r.turns) > 1))
    if tree or (verbose and r.turns):
        title = f" {shorten(name, 60, g.ellipsis)}" if name and name != r.case_id else ""
        items = [_turn_node(r, t, g, s, verbose) for t in r.turns] + _tail_nodes(r, g, s, verbose)
        return [head + title, *_tree(items, g), f"  {s.status(r.status)}{took}{_status_tail(r)}"]
    preview = _said(r.turns[0]) if r.turns else ""
    if mode == "code" and not preview:
        preview = name or "(code test)"
    shown = f" {shorten(preview, 48, g.ellipsis)}" if preview else ""
    lines = [f"{head}{shown} {s.status(r.status)}{took}{_blamed(r)}"]
    if r.status != "passed" or verbose:
        checks = [a for t in r.turns for a in t.assertions] + list(r.assertions)
        nodes: list[Node] = [(_check(a, g, s), []) for a in checks if verbose or not a.passed]
        if _adds(r.error, checks, []):
            nodes.append((_error_line(r, g, s), []))
        lines += _tree(nodes, g)
    return lines


def summary_block(
    run: Run, seconds: float, g: Glyphs, s: Style, output: str | None = None
) -> list[str]:
    """The block after the last instance; totals and the pass rate are `run.summary`'s."""
    sm = run.summary
    parallel = int(run.settings.get("parallel") or 1)
    rows: list[tuple[str, str]] = [("Agent", clean(run.agent)), ("Total", str(sm["total"]))]
    rows += [("Passed", str(sm["passed"])), ("Failed", str(sm["failed"]))]
    for key in ("errors", "timeouts", "skipped", "cancelled", "blocked"):
        if sm[key]:
            rows.append((key.capitalize(), str(sm[key])))
    rows.append(("Pass rate", pct(sm["pass_rate"])))
    blamed = {b: n for b, n in (sm.get("blame") or {}).items() if n}
    if blamed:  # the pass rate counts the agent's failures only: say what it left out
        text = ", ".join(f"{b} {n}" for b, n in blamed.items())
        if sm.get("not_agent"):
            text += " (only the agent's count towards the pass rate)"
        rows.append(("Blame", text))
    cost = cost_line(dict(sm))
    if cost:
        rows.append(("Cost", cost.removeprefix("cost ")))
    runs = int(run.settings.get("runs") or 1)
    if runs > 1 and sm.get("mean_pass") is not None:
        # thinkingbox's `tb agg` "Mean per-sample accuracy" with its Jeffreys interval
        ci = f"{pct(sm['mean_pass_ci_low'])} to {pct(sm['mean_pass_ci_high'])}"
        rows.append(("Mean pass", f"{pct(sm['mean_pass'])} of runs (95% CI {ci})"))
    if runs > 1 or sm["cases"] != sm["total"]:
        rows.append(
            (
                "Cases",
                f"{sm['cases']} ("
                + (", ".join(f"{n} {w}" for w, n in sm["stability"].items() if n) or "none run")
                + ")",
            )
        )
    took = duration(seconds)
    if parallel > 1 and sm["total"]:
        took += f" (effective: {duration(seconds / sm['total'])}/test with {parallel} parallel)"
    rows.append(("Duration", took))
    if output:
        rows.append(("Output", clean(output)))
    lines = _banner(g, s, "Summary", heavy=False)
    lines += [f"  {k + ':':<11}{v}" for k, v in rows]
    bad_suite = [a for a in run.suite_assertions if not a.passed]
    lines += [f"  Suite check {_check(a, g, s)}" for a in bad_suite]
    if run.error:
        lines.append(f"  {s(g.bad, 'red')} {shorten(run.error, 200, g.ellipsis)}")
    if run.status == "cancelled":
        lines.append(f"  {s(g.bad, 'yellow')} run cancelled: unfinished instances are 'cancelled'")
    return lines + _verdict(run, sm, bad_suite, g, s)


def _verdict(
    run: Run, sm: Mapping[str, Any], bad_suite: Sequence[object], g: Glyphs, s: Style
) -> list[str]:
    words = [
        f"{sm[key]} {label}"
        for key, label in (
            ("failed", "FAILED"),
            ("errors", "ERRORS" if sm["errors"] != 1 else "ERROR"),
            ("timeouts", "TIMED OUT"),
            ("cancelled", "CANCELLED"),
            ("blocked", "BLOCKED"),
        )
        if sm[key]
    ]
    words += [f"{len(bad_suite)} SUITE CHECK(S) FAILED"] if bad_suite else []
    words += ["RUN FAILED"] if run.status == "failed" or run.error else []
    if not words and run.status == "completed" and sm["total"] > sm["skipped"]:
        text = s(f"{g.cheer} ALL TESTS PASSED {g.cheer}", "bold", "green")
    elif not words:
        text = s("NO TESTS RAN", "bold", "yellow")
    else:
        text = s(f"{g.bad} " + ", ".join(words), "bold", "red")
    return [_rule(g, True), " " + text, _rule(g, True)]


def stability_table(run: Run, g: Glyphs, s: Style) -> list[str]:
    """Yao's per-case stability table: case, runs, passed, pass rate and `stability` (Yao's
    class for a flaky case; `stable`, `always fails` or `one run` otherwise)."""
    from convlab.analysis.frames import run_rollup

    cases = run_rollup(run).cases  # the same figures as run.stability(), kept with the run
    head: tuple[str, ...] = ("Case", "Runs", "Passed", "Pass rate", "Stability")
    rows: list[tuple[str, ...]] = [
        (
            shorten(case_id, 40, g.ellipsis),
            str(rec["runs"]),
            str(rec["passed"]),
            pct(rec["pass_rate"]),
            str(rec["stability"] or "-"),
            str(rec.get("not_agent_blame") or ""),
        )
        for case_id, rec in cases.items()
    ]
    right: tuple[bool, ...] = (False, True, True, True, False)
    if any(row[-1] for row in rows):  # failures left out of the pass rate, by blame
        head, right = (*head, "Not the agent's"), (*right, False)
    else:
        rows = [row[:-1] for row in rows]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def fmt(row: Sequence[str]) -> str:
        cells = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)
        ]
        return "  " + "  ".join(cells).rstrip()

    colors = {"stable": "green", "mostly_stable": "yellow"}
    out = _banner(g, s, f"Stability ({run.settings.get('runs')} runs per case)", heavy=False)
    out.append(s(fmt(head), "bold"))
    for row in rows:
        out.append(s(fmt(row), colors.get(row[4], "dim" if row[4] == "-" else "red")))
    return out
