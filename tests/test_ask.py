"""`convlab.ask`: one message, the Answer, and the transcript a notebook cell shows."""

from __future__ import annotations

import asyncio
from html.parser import HTMLParser
from typing import Any

import pytest

import convlab as cl
from convlab.htmlkit import STATUS_CSS
from convlab.notebook.transcript import answer_bundle, answer_html, answer_text

XSS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"]


class _Tags(HTMLParser):
    """Every tag and attribute a browser would build from the HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.text += data


def _parse(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    return parser


def _evil_agent(messages: list[dict[str, Any]]) -> cl.Reply:
    return cl.Reply(
        text=f"Sure!\n{XSS[0]}\nsecond line {XSS[1]}",
        tool_calls=[
            cl.ToolCall("lookup", {"q": "<b>", "x": XSS[1]}, result={"hit": XSS[0]}),
            cl.ToolCall("broken", {"a": 1}, error="<b>boom</b>"),
        ],
    )


# ---------------------------------------------------------------- the Answer


def test_plain_function_answer_and_assertions():
    a = cl.ask(lambda m: "hi there", "Hello", {"type": "contains", "value": "hi"})
    assert isinstance(a, cl.Answer)
    assert a.text == "hi there" and a.passed
    assert [m.role for m in a.messages] == ["user"] and a.messages[0].content == "Hello"
    assert a.results[0].status == "passed" and a.duration_ms >= 0


def test_history_is_sent_before_the_message():
    seen: list[list[dict[str, Any]]] = []

    def agent(messages: list[dict[str, Any]]) -> str:
        seen.append(messages)
        return f"{len(messages)} messages"

    history = [
        {"role": "user", "content": "my name is Ada"},
        cl.Message(role="assistant", content="Hi Ada"),
    ]
    a = cl.ask(agent, "what is my name?", history=history)
    assert [(m["role"], m["content"]) for m in seen[0]] == [
        ("user", "my name is Ada"),
        ("assistant", "Hi Ada"),
        ("user", "what is my name?"),
    ]
    assert a.text == "3 messages" and len(a.messages) == 3
    text = answer_text(a)
    assert "(user) my name is Ada" in text and "(agent) Hi Ada" in text
    assert "user> what is my name?" in text
    assert "history" in answer_html(a)


def test_world_is_the_agents_state_and_comes_back_as_effects():
    def agent(messages: list[dict[str, Any]], ctx: Any) -> str:
        ctx.world["count"] = ctx.world.get("count", 0) + 1
        return f"count={ctx.world['count']}"

    world = {"count": 41}
    a = cl.ask(agent, "increment", {"type": "contains", "value": "count=42"}, world=world)
    assert a.passed and a.observation.effects == {"count": 42}
    assert world == {"count": 41}  # the caller's dict is not changed
    assert "world state after" in answer_html(a)


def test_demo_agent_pass_and_fail():
    a = cl.ask(
        "demo:expense",
        "Submit a travel expense for $3500",
        {"type": "contains", "value": "confirm"},
        {"type": "tool_called", "value": "submit_expense"},
    )
    assert not a.passed
    assert [r.status for r in a.results] == ["passed", "failed"]
    assert [c.name for c in a.tool_calls] == ["create_expense"]
    assert a.tool_calls[0].arguments == {"type": "travel", "amount": 3500}


def test_judge_assertion_without_a_judge_is_an_error_not_a_pass():
    judge_q = {"kind": "judge", "question": "Is the reply polite?"}
    a = cl.ask(lambda m: "hello", "hi", judge_q)
    r = a.results[0]
    assert r.status == "error" and not a.passed
    assert "no judge is configured" in (r.error or "")
    assert "ERROR" in answer_text(a).splitlines()[0]
    assert "no judge is configured" in answer_html(a)
    assert cl.ask(lambda m: "hello", "hi", judge_q, judge=lambda m: "YES").passed
    assert not cl.ask(lambda m: "hello", "hi", judge_q, judge=lambda m: "NO").passed


def test_an_invalid_assertion_is_a_suite_error():
    with pytest.raises(cl.SuiteError, match="valeu"):
        cl.ask(lambda m: "x", "hi", {"type": "contains", "valeu": "x"})


def test_ask_works_under_a_running_event_loop():
    async def cell() -> cl.Answer:  # what a notebook cell (or a magic) does
        return cl.ask("demo:expense", "I want to submit an expense")

    assert "expense" in asyncio.run(cell()).text


# ---------------------------------------------------------------- the transcript


def test_bundle_has_text_and_html_and_repr_is_the_text():
    a = cl.ask(lambda m: "hi", "Hello")
    bundle = a._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle == answer_bundle(a)
    assert repr(a) == bundle["text/plain"] == str(a)


def test_no_assertions_reads_answer():
    a = cl.ask(lambda m: "hi", "Hello")
    assert answer_text(a).startswith("answer · ")
    assert "<lambda> · no assertions · " in answer_text(a).splitlines()[0]
    html = answer_html(a)
    assert "PASS" not in html and "FAIL" not in html and ">answer<" in html


def test_transcript_shows_tool_calls_checks_and_why_a_check_failed():
    a = cl.ask(
        "demo:finance",
        "What was the net cash from operating activities in 2008 minus 2009?",
        {"type": "contains", "value": "-25587"},
        {"type": "equals", "value": "25587"},
    )
    text = answer_text(a)
    lines = text.splitlines()
    assert lines[0].startswith("FAIL · demo:finance · 1 of 2 assertions passed")
    assert '  tool subtract {"a": 181001, "b": 206588}' in lines
    assert "       -> -25587" in lines
    assert any(ln.startswith("  ✓ contains") for ln in lines)
    assert any(ln.startswith("  ✗ equals") for ln in lines)
    assert '      expected: "25587"' in lines and '      actual:   "-25587"' in lines

    html = answer_html(a)
    page = _parse(html)
    assert "✗ FAIL" in page.text and "demo:finance" in page.text
    assert page.text.count("lookup_figure") >= 2 and "subtract" in page.text
    assert '"metric": "net cash from operating activities"' in page.text  # args as JSON
    assert "181001" in page.text and "-25587" in page.text  # results
    assert "✓" in page.text and "✗" in page.text
    assert "expected" in page.text and '"25587"' in page.text
    assert STATUS_CSS["failed"] in html  # the failed colour from _style, theme-following
    assert html.startswith("<div class='convlab'><style data-convlab-style>")


def test_long_and_multiline_replies_keep_their_lines():
    reply = "first line\nsecond line\n" + "word " * 3000
    a = cl.ask(lambda m: reply, "talk")
    assert "second line" in answer_html(a) and "pre-wrap" in answer_html(a)
    lines = answer_text(a).splitlines()
    assert "  agent> first line" in lines and "         second line" in lines


def test_structured_data_and_status_are_shown():
    a = cl.ask(lambda m: {"total": 42, "items": list(range(40))}, "sum")
    text = answer_text(a)
    assert '"total": 42' in text and "0, 1, 2" in text  # a list of numbers stays on one line
    assert "data" in _parse(answer_html(a)).text


@pytest.mark.parametrize("where", ["reply", "tool", "message", "history"])
def test_untrusted_text_is_escaped(where):
    history = [{"role": "assistant", "content": XSS[0]}] if where == "history" else None
    message = XSS[1] if where == "message" else "hello"
    if where == "reply":
        agent: Any = lambda m: f"{XSS[0]} and {XSS[1]}"  # noqa: E731
    elif where == "tool":
        agent = _evil_agent
    else:
        agent = lambda m: "ok"  # noqa: E731
    a = cl.ask(agent, message, {"type": "contains", "value": XSS[1]}, history=history)
    html = answer_html(a)
    page = _parse(html)
    assert page.tags <= {"div", "span", "style", "pre", "code", "details", "summary"}
    assert not {name for name in page.attrs if name.startswith("on")}
    assert "<script" not in html and "<img" not in html
    assert page.attrs <= {"class", "style", "data-status", "data-convlab-style"}


def test_tool_calls_with_untrusted_arguments_and_results():
    a = cl.ask(_evil_agent, "go")
    html = answer_html(a)
    page = _parse(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '"q": "<b>"' in page.text and XSS[1] in page.text and XSS[0] in page.text
    assert "<b>boom</b>" in page.text and "<b>" not in html
    text = answer_text(a)
    assert 'tool lookup {"q": "<b>", "x": "<img src=x onerror=alert(1)>"}' in text
    assert "       error: <b>boom</b>" in text
