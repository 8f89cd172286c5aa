"""A run as JUnit XML, the one test-report format every CI server reads.

One `<testcase>` per case instance (so repeated runs of a flaky case show as separate
results), `<failure>` for failed checks, `<error>` for errors and timeouts, `<skipped>` for
instances that never ran (skipped, blocked, cancelled): the same split as the CLI's exit code.
The XML is built with ElementTree (attribute and text escaping), and characters XML 1.0
cannot carry at all (NUL, ESC, ... from agent output) are written as visible `\\xNN` text,
because a single one of them makes the whole file unreadable for the CI tool.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from convlab._readable import cut
from convlab.analysis.io import register_saver, write_atomic

if TYPE_CHECKING:
    from convlab.model.records import AssertionResult, CaseResult
    from convlab.model.run import Run

__all__ = ["run_junit"]

_INVALID = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""What XML 1.0 cannot hold, plus DEL and the C1 controls (`\\x9b` is a terminal CSI)."""
_MESSAGE_LIMIT = 500
_FAILURE = {"failed": "failure", "error": "error", "timeout": "error"}
_SKIPPED = ("skipped", "blocked", "cancelled")


def _clean(text: object, limit: int | None = None) -> str:
    """Text that XML 1.0 can hold: invalid characters become `\\xNN`, long text is cut."""
    out = _INVALID.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if text is None else str(text))
    return out if limit is None else cut(out, limit)


def _name(r: CaseResult, repeated: bool) -> str:
    from convlab.model.records import variant_label

    name = r.case_id + (f"[{variant_label(r.variant)}]" if r.variant else "")
    rep = f", rep {r.repetition + 1}" if r.repetition else ""
    return name + (f" (run {r.run + 1}{rep})" if repeated else "")


def _assertion_lines(a: AssertionResult, where: str) -> list[str]:
    if a.status == "passed":
        return []
    head = f"{where}{a.status.upper()} {a.label or a.id or a.kind}: {a.error or a.message}"
    return [head, f"  expected: {a.expected!r}", f"  actual:   {a.actual!r}"]


def _details(r: CaseResult) -> str:
    """The failed assertions with expected/actual, then the last reply: what a reviewer needs."""
    lines = [f"status: {r.status}"] + ([f"blame: {r.blame}"] if r.blame else [])
    lines += [f"code: {r.code}"] if r.code else []
    lines += [f"error: {r.error}"] if r.error else []
    info = r.error_info
    if info is not None and info.location:  # where the user's code raised it, and how
        lines += [f"raised at: {info.location}", info.traceback.rstrip("\n")]
    for t in r.turns:
        for a in t.assertions:
            lines += _assertion_lines(a, f"turn {t.index + 1}: ")
    for a in r.assertions:
        lines += _assertion_lines(a, "")
    lines += [
        f"checkpoint {c.id} not reached" for c in r.checkpoints if c.required and not c.passed
    ]
    last = next((t.observation for t in reversed(r.turns) if t.observation is not None), None)
    if last is not None and last.text:
        lines.append(f"last reply: {last.text}")
    return _clean("\n".join(lines), 20_000)


def _testcase(parent: ET.Element, suite: str, r: CaseResult, repeated: bool) -> None:
    tc = ET.SubElement(parent, "testcase", classname=suite, name=_clean(_name(r, repeated)))
    tc.set("time", f"{r.duration_ms / 1000:.3f}")
    if r.status in _FAILURE:
        tag = _FAILURE[r.status]
        message = _clean(r.error or r.status, _MESSAGE_LIMIT)
        el = ET.SubElement(tc, tag, message=message, type=r.status)
        el.text = _details(r)
    elif r.status in _SKIPPED:
        ET.SubElement(tc, "skipped", message=_clean(r.error or r.status, _MESSAGE_LIMIT))


def run_junit(run: Run) -> str:
    """JUnit XML for the run: one testsuite, one testcase per instance, plus suite checks."""
    suite = run.suite.id if run.suite and run.suite.id else "convlab"
    counts: Counter[str] = Counter(r.status for r in run.results)
    per_case = Counter((r.case_id, tuple(sorted(r.variant.items()))) for r in run.results)
    failures = counts["failed"] + sum(a.status == "failed" for a in run.suite_assertions)
    errors = counts["error"] + counts["timeout"]
    errors += sum(a.status == "error" for a in run.suite_assertions)
    total = len(run.results) + len(run.suite_assertions)
    seconds = sum(r.duration_ms for r in run.results) / 1000
    attrs = {
        "name": _clean(suite),
        "tests": str(total),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(sum(counts[s] for s in _SKIPPED)),
        "time": f"{seconds:.3f}",
    }
    root = ET.Element("testsuites", attrs)
    ts = ET.SubElement(root, "testsuite", attrs)
    if run.started_at:
        ts.set("timestamp", _clean(run.started_at))
    props = ET.SubElement(ts, "properties")
    for prop, value in (("agent", run.agent), ("run_id", run.id), ("run_status", run.status)):
        ET.SubElement(props, "property", name=prop, value=_clean(value))
    for r in run.results:
        key = (r.case_id, tuple(sorted(r.variant.items())))
        _testcase(ts, _clean(suite), r, per_case[key] > 1)
    for i, a in enumerate(run.suite_assertions):
        name = _clean(f"suite check {i + 1}: {a.label or a.id or a.kind}")
        tc = ET.SubElement(ts, "testcase", classname=_clean(suite), name=name, time="0.000")
        if a.status in ("failed", "error"):
            tag = "failure" if a.status == "failed" else "error"
            el = ET.SubElement(tc, tag, message=_clean(a.error or a.message, _MESSAGE_LIMIT))
            el.text = _clean("\n".join(_assertion_lines(a, "")))
        elif a.status == "skipped":
            ET.SubElement(tc, "skipped", message=_clean(a.message, _MESSAGE_LIMIT))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


@register_saver(".xml")
def _save_junit(run: Run, path: Path) -> None:
    write_atomic(path, run_junit(run))
