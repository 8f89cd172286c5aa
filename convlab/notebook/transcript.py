"""`convlab.ask`'s answer as a chat transcript: pytest-like text and escaped, styled HTML.

A quick test is read, not scanned: the reader wants to see what was sent, what the agent
did (each tool call with its arguments and result) and why an assertion failed, in the
order it happened. The same facts go into both forms, so a plain `print(answer)` (CLI,
logs, doctests) tells the same story as the rendered cell.

Everything shown comes from the agent or the user (reply text, tool arguments and results,
history): untrusted text, so every value that reaches HTML goes through `html.escape`, and
the only markup is ours.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from convlab._readable import cut_noted, millis, visible
from convlab.htmlkit import GLYPHS, STATUS_CSS, css_color, location_html, style_tag

if TYPE_CHECKING:
    from convlab.model.answer import Answer
    from convlab.model.conversation import Message, ToolCall
    from convlab.model.records import AssertionResult

__all__ = ["answer_bundle", "answer_html", "answer_text"]

TEXT_LIMIT = 20_000
"""Reply text shown in full up to this many characters (a runaway reply stays readable)."""
VALUE_LIMIT = 4_000
"""Tool arguments/results, data and world state: cut after this many characters."""
SHORT_LIMIT = 300
"""Expected/actual values of a failed assertion: the gist, not the whole reply again."""
ONE_LINE = 72
"""JSON this short stays on one line; longer JSON is indented."""


def _as_json(value: Any) -> Any:
    """A tool's arguments as given: a JSON string is parsed so it can be indented."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _pretty(value: Any, pad: str = "") -> str:
    """Indented JSON whose short parts (and lists of plain values) stay on one line."""
    line = json.dumps(value, ensure_ascii=False, default=str)
    inner = pad + "  "
    if isinstance(value, dict) and value and len(pad) + len(line) > ONE_LINE:
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_pretty(v, inner)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    plain = all(not isinstance(v, dict | list) for v in value) if isinstance(value, list) else True
    if isinstance(value, list) and value and not plain and len(pad) + len(line) > ONE_LINE:
        items = [inner + _pretty(v, inner) for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return line


def _dump(value: Any, limit: int = VALUE_LIMIT, compact: bool = False) -> str:
    """JSON for a value (strings as they are): one line when short or `compact`, else indented."""
    if isinstance(value, str):
        return cut_noted(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str) if compact else _pretty(value)
    except (TypeError, ValueError):
        text = repr(value)
    return cut_noted(text, limit)


def _show(value: Any) -> str:
    """A value in a failure line: strings quoted (so '' and ' x' show) but not re-escaped."""
    if isinstance(value, str):
        quoted = '"' + value.replace('"', '\\"').replace("\n", "\\n") + '"'
        return cut_noted(quoted, SHORT_LIMIT)
    return cut_noted(_dump(value, compact=True), SHORT_LIMIT)


def _verdict(answer: Answer) -> tuple[str, str]:
    """(word, status) for the header: PASS, FAIL, ERROR (only errors, or the agent raised),
    or `answer`."""
    if answer.error is not None:
        return "ERROR", "error"
    if not answer.results:
        return "answer", "running"
    if answer.passed:
        return "PASS", "passed"
    bad = {r.status for r in answer.results if not r.passed}
    return ("ERROR", "error") if bad == {"error"} else ("FAIL", "failed")


def _counts(answer: Answer) -> str:
    if answer.error is not None:
        return "the agent raised"
    n = len(answer.results)
    if not n:
        return "no assertions"
    ok = sum(r.passed for r in answer.results)
    return f"{ok} of {n} assertion{'s' if n != 1 else ''} passed"


def _history_line(m: Message) -> str:
    """What one earlier message says, tool calls and tool results included."""
    text = m.text()
    if m.role == "tool":
        return f"{m.name or 'tool'} -> {text}" if m.name else text
    calls = [str((c.get("function") or {}).get("name", "?")) for c in m.tool_calls or []]
    if calls:
        text = (text + "\n" if text else "") + f"(called {', '.join(calls)})"
    return text


def _role(m: Message) -> str:
    return "agent" if m.role == "assistant" else m.role


def _split_messages(answer: Answer) -> tuple[list[Message], Message | None]:
    """(the history, the user message) of what the agent was sent."""
    if not answer.messages:
        return [], None
    return answer.messages[:-1], answer.messages[-1]


def _name(r: AssertionResult) -> str:
    return r.label or r.id or r.kind


def _obs_extras(answer: Answer) -> list[tuple[str, Any]]:
    """Structured parts of the reply beside its text, in the order a reader wants them."""
    obs = answer.observation
    out: list[tuple[str, Any]] = []
    if obs.data is not None and obs.data != {} and obs.data != []:
        out.append(("data", obs.data))
    if obs.interaction:
        out.append(("interaction", obs.interaction))
    if obs.facts:
        out.append(("facts", obs.facts))
    return out


# ---------------------------------------------------------------- text


def _indent(text: str, first: str, rest: str) -> list[str]:
    lines = text.splitlines() or [""]
    return [first + lines[0], *(rest + line for line in lines[1:])]


def _check_lines(r: AssertionResult, depth: int = 1) -> list[str]:
    pad = "  " * depth
    head = f"{pad}{GLYPHS.get(r.status, '?')} {_name(r)}"
    lines = _indent(r.message, head + ": ", pad + "    ") if r.message else [head]
    if r.status in ("failed", "error"):
        if r.error and r.error != r.message:
            lines.append(f"{pad}    error:    {r.error}")
        if r.expected is not None or r.actual is not None:
            lines.append(f"{pad}    expected: {_show(r.expected)}")
            lines.append(f"{pad}    actual:   {_show(r.actual)}")
    for child in r.children:
        lines += _check_lines(child, depth + 1)
    return lines


def answer_text(answer: Answer) -> str:
    """The transcript as readable lines (what `print(answer)` and the CLI show), control
    characters shown (`visible`): the agent's text never drives the terminal."""
    return visible(_answer_lines(answer))


def _answer_lines(answer: Answer) -> str:
    word, _ = _verdict(answer)
    head = f"{word} · {answer.agent or 'agent'} · {_counts(answer)} · {millis(answer.duration_ms)}"
    lines = [head]
    history, last = _split_messages(answer)
    for m in history:
        lines += _indent(_history_line(m), f"  ({_role(m)}) ", "      ")
    if last is not None:
        lines += _indent(last.text(), "  user> ", "        ")
    if answer.error is not None:
        return "\n".join(lines + _raised_lines(answer))
    obs = answer.observation
    for call in obs.tool_calls:
        lines.append(f"  tool {call.name} {_dump(_as_json(call.arguments), compact=True)}")
        if call.error:
            lines.append(f"       error: {call.error}")
        elif call.result is not None:
            lines.append(f"       -> {_dump(call.result, compact=True)}")
    text = cut_noted(obs.text, TEXT_LIMIT) if obs.text else "(no text)"
    lines += _indent(text, "  agent> ", "         ")
    for label, value in _obs_extras(answer):
        lines += _indent(_dump(value), f"  {label}: ", "    ")
    if obs.status != "completed":
        lines.append(f"  status: {obs.status}")
    if obs.error:
        lines.append(f"  error: {obs.error}")
    for r in answer.results:
        lines += _check_lines(r)
    return "\n".join(lines)


RAISE_HINT = "ask(..., raise_errors=True) raises it, for %debug"
"""How to get the exception itself, as the error card says."""


def _raised_lines(answer: Answer) -> list[str]:
    """What the agent raised: the error, where in the user's code, the short traceback."""
    lines = _indent(answer.error or "", "  agent raised ", "    ")
    info = answer.error_info
    if info is not None and info.location:
        lines.append(f"    at {info.location}")
    if info is not None and info.traceback:
        lines += _indent(info.traceback.rstrip("\n"), "    ", "    ")
    return [*lines, f"  ({RAISE_HINT})"]


# ---------------------------------------------------------------- HTML

e = html.escape


def _color(status: str) -> str:
    return STATUS_CSS.get(status, css_color("muted"))


def _json_block(value: Any) -> str:
    return f"<pre class='cl-json'>{e(_dump(value))}</pre>"


def _bubble(who: str, role_label: str, text: str, extra_class: str = "") -> str:
    body = e(cut_noted(text, TEXT_LIMIT)) if text else "<span class='cl-empty'>(no text)</span>"
    return (
        f"<div class='cl-msg cl-{who}{extra_class}'><div class='cl-role'>{e(role_label)}</div>"
        f"<div class='cl-bubble'>{body}</div></div>"
    )


def _history_html(m: Message) -> str:
    who = "user" if m.role == "user" else "agent"
    return _bubble(who, f"{_role(m)} · history", _history_line(m), " cl-hist")


def _tool_html(call: ToolCall) -> str:
    rows = [f"<span>args</span>{_json_block(_as_json(call.arguments))}"]
    if call.error:
        rows.append(
            f"<span>error</span><div style='color:{_color('failed')}'>{e(call.error)}</div>"
        )
    elif call.result is not None:
        rows.append(f"<span>result</span>{_json_block(call.result)}")
    return (
        f"<div class='cl-tool'><span class='cl-muted'>tool</span> "
        f"<span class='cl-tool-name'>{e(call.name)}</span>"
        f"<div class='cl-kv'>{''.join(rows)}</div></div>"
    )


def _raised_html(answer: Answer) -> str:
    """The error card's body: what the agent raised, where, and the short traceback."""
    info = answer.error_info
    where = location_html(info)
    tb = (
        f"<pre class='cl-json'>{e(info.traceback)}</pre>"
        if info is not None and info.traceback
        else ""
    )
    role = f"agent · {answer.agent}" if answer.agent else "agent"
    return (
        f"<div class='cl-msg cl-agent cl-raised'><div class='cl-role'>{e(role)}</div>"
        f"<div class='cl-extra' style='color:{_color('error')}'>raised {e(answer.error or '')}"
        "</div>"
        + (f"<div class='cl-extra cl-muted'>{where.strip()}</div>" if where else "")
        + f"{tb}"
        f"<div class='cl-extra cl-muted'>{e(RAISE_HINT)}</div></div>"
    )


def _reply_html(answer: Answer) -> str:
    if answer.error is not None:
        return _raised_html(answer)
    obs = answer.observation
    parts = [_tool_html(c) for c in obs.tool_calls]
    text = obs.text or ""
    body = e(cut_noted(text, TEXT_LIMIT)) if text else "<span class='cl-empty'>(no text)</span>"
    parts.append(f"<div class='cl-bubble'>{body}</div>")
    for label, value in _obs_extras(answer):
        parts.append(f"<div class='cl-extra'><span class='cl-muted'>{e(label)}</span>")
        parts.append(f"{_json_block(value)}</div>")
    if obs.status != "completed":
        parts.append(f"<div class='cl-extra cl-muted'>status: {e(obs.status)}</div>")
    if obs.error:
        parts.append(f"<div class='cl-extra' style='color:{_color('error')}'>{e(obs.error)}</div>")
    if obs.effects:
        parts.append(
            "<details class='cl-extra'><summary class='cl-muted'>world state after</summary>"
            f"{_json_block(obs.effects)}</details>"
        )
    role = f"agent · {answer.agent}" if answer.agent else "agent"
    return (
        f"<div class='cl-msg cl-agent'><div class='cl-role'>{e(role)}</div>{''.join(parts)}</div>"
    )


def _check_html(r: AssertionResult) -> str:
    color = _color(r.status)
    mark = f"<span class='cl-mark' style='color:{color}'>{e(GLYPHS.get(r.status, '?'))}</span>"
    name = f"<code>{e(_name(r))}</code>"
    message = f" {e(r.message)}" if r.message else ""
    why: list[str] = []
    if r.status in ("failed", "error"):
        if r.error and r.error != r.message:
            why.append(f"<span>error</span><div style='color:{color}'>{e(r.error)}</div>")
        if r.expected is not None or r.actual is not None:
            why.append(f"<span>expected</span><code>{e(_show(r.expected))}</code>")
            why.append(f"<span>actual</span><code>{e(_show(r.actual))}</code>")
    detail = f"<div class='cl-why cl-kv'>{''.join(why)}</div>" if why else ""
    children = "".join(_check_html(c) for c in r.children)
    sub = f"<div class='cl-sub'>{children}</div>" if children else ""
    style = f" style='color:{color}'" if r.status != "passed" else ""
    return (
        f"<div class='cl-check' data-status='{e(r.status)}'>{mark}{name}"
        f"<span{style}>{message}</span>{detail}{sub}</div>"
    )


def answer_html(answer: Answer) -> str:
    """The transcript as one self-contained, escaped HTML fragment (inline CSS only)."""
    word, status = _verdict(answer)
    judged = bool(answer.results) or answer.error is not None
    color = _color(status) if judged else css_color("muted")
    glyph = f"{GLYPHS[status]} " if judged else ""
    head = (
        f"<div class='cl-head'><span class='cl-verdict' style='color:{color}'>"
        f"{e(glyph + word)}</span><span class='cl-title'>{e(answer.agent or 'agent')}</span>"
        f"<span class='cl-muted'>{e(_counts(answer))} · {e(millis(answer.duration_ms))}"
        "</span></div>"
    )
    history, last = _split_messages(answer)
    chat = [_history_html(m) for m in history]
    if last is not None:
        chat.append(_bubble("user", "user", last.text()))
    chat.append(_reply_html(answer))
    checks = "".join(_check_html(r) for r in answer.results)
    checks_div = f"<div class='cl-checks'>{checks}</div>" if checks else ""
    return (
        f"<div class='convlab'>{style_tag()}"
        f"<div class='cl-card cl-answer'>{head}<div class='cl-chat'>{''.join(chat)}</div>"
        f"{checks_div}</div></div>"
    )


def answer_bundle(answer: Answer) -> dict[str, Any]:
    """The mime bundle a notebook displays: text/plain and the HTML transcript."""
    return {"text/plain": answer_text(answer), "text/html": answer_html(answer)}
