"""agents.http against a real JSON endpoint on 127.0.0.1 (aiohttp.web in a thread): the request
template's placeholders, the reply paths, missing paths named in the error, spec strings,
faults and header secrets kept out of errors."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from aiohttp import web
from fault_server import Counts, FaultServer

import convlab as cl
from convlab.agents.http_agent import HTTPAgent, get_path, render
from convlab.agents.protocol import AgentContext, as_agent
from convlab.errors import AgentError, AgentHTTPError, AgentResponseError
from convlab.model.conversation import Message
from convlab.model.suite import Case, Suite

TOKEN = "tok-VERY-SECRET-42"


async def endpoint(request: web.Request, counts: Counts) -> web.Response:
    """Routes by path: echo the body under several reply shapes, or fail."""
    body = await request.json()
    shape = request.match_info["shape"]
    if shape == "text":
        return web.json_response({"text": f"got {len(body['messages'])} messages"})
    if shape == "content":
        return web.json_response({"content": "from content"})
    if shape == "openai":
        return web.json_response({"choices": [{"message": {"content": "from choices"}}]})
    if shape == "echo":
        return web.json_response(
            {
                "result": {
                    "answer": "echoed",
                    "request": body,
                    "calls": [
                        {"name": "lookup", "arguments": {"q": 1}, "result": "found"},
                        {"id": "c2", "function": {"name": "save", "arguments": '{"x": 2}'}},
                    ],
                }
            }
        )
    if shape == "nothing":
        return web.json_response({"unexpected": True})
    if shape == "busy":
        return web.Response(status=503, text="busy", headers={"Retry-After": "2"})
    if shape == "leak-query":
        return web.Response(status=403, text=f"key {request.query['key']} is not valid")
    if shape == "leak":
        return web.Response(status=500, text=f"token was {request.headers['X-Api-Key']}")
    return web.Response(status=404, text="no such shape")


@pytest.fixture(scope="module")
def base():
    with FaultServer(endpoint, path="/{shape}") as server:
        yield server.base


def ask(agent, messages: list[Message], ctx: AgentContext | None = None):
    ctx = ctx or AgentContext()

    async def go():
        try:
            session = await agent.open(ctx)
            return await session.send(messages, ctx)
        finally:
            await agent.aclose()

    return asyncio.run(go())


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


@pytest.mark.parametrize(
    ("shape", "text"),
    [("text", "got 1 messages"), ("content", "from content"), ("openai", "from choices")],
)
def test_default_template_and_default_text_paths(base, shape, text):
    obs = ask(cl.agents.http(f"{base}/{shape}"), user("hi"))
    assert obs.text == text
    assert obs.messages[0].role == "assistant"


def test_template_placeholders_and_reply_paths(base):
    template = {
        "history": "{messages}",
        "question": "Q: {text}",
        "meta": {"case": "{case_id}", "thread": "{instance}", "turn": "{turn}"},
        "state": "{world}",
        "inline": "world={world}",
        "fixed": [1, "{not_a_placeholder}"],
    }
    agent = cl.agents.http(
        f"{base}/echo",
        request=template,
        response={"text": "result.answer", "data": "result.request", "tool_calls": "result.calls"},
    )
    ctx = AgentContext(case=Case(id="c1", input=user("x")), instance="c1#0", turn=2, world={"n": 1})
    messages = [*user("first"), Message(role="assistant", content="ok"), *user("second")]
    obs = ask(agent, messages, ctx)
    assert obs.text == "echoed"
    assert obs.data == {
        "history": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "second"},
        ],
        "question": "Q: second",
        "meta": {"case": "c1", "thread": "c1#0", "turn": 2},
        "state": {"n": 1},
        "inline": 'world={"n":1}',
        "fixed": [1, "{not_a_placeholder}"],
    }
    assert [(c.name, c.arguments, c.result, c.id) for c in obs.tool_calls] == [
        ("lookup", {"q": 1}, "found", None),
        ("save", {"x": 2}, None, "c2"),
    ]


def test_a_missing_path_is_an_error_naming_it(base):
    agent = cl.agents.http(f"{base}/echo", response={"text": "result.missing.answer"})
    with pytest.raises(AgentResponseError, match=r"no text at path 'result\.missing\.answer'"):
        ask(agent, user("hi"))
    agent = cl.agents.http(f"{base}/echo", response={"data": "result.calls.5"})
    with pytest.raises(AgentResponseError, match=r"no data at path 'result\.calls\.5'"):
        ask(agent, user("hi"))


def test_no_text_at_any_default_path(base):
    with pytest.raises(AgentResponseError) as info:
        ask(cl.agents.http(f"{base}/nothing"), user("hi"))
    message = str(info.value)
    assert "text, content, choices.0.message.content" in message
    assert '{"unexpected": true}' in message or '{"unexpected":true}' in message
    assert info.value.retryable is False


def test_spec_strings(base):
    port_url = base.removeprefix("http://")
    for spec in (f"{base}/content", f"http:{base}/content", f"http:{port_url}/content"):
        agent = as_agent(spec)
        assert isinstance(agent, HTTPAgent)
        assert ask(agent, user("hi")).text == "from content"
    assert as_agent("https://example.invalid/chat").url.scheme == "https"


def test_faults_and_secret_headers(base):
    with pytest.raises(AgentHTTPError) as info:
        ask(cl.agents.http(f"{base}/busy"), user("hi"))
    assert (info.value.status, info.value.retryable, info.value.retry_after) == (503, True, 2.0)
    agent = cl.agents.http(f"{base}/leak", headers={"X-Api-Key": TOKEN})
    with pytest.raises(AgentHTTPError) as leak:
        ask(agent, user("hi"))
    assert TOKEN not in str(leak.value) and "token was ***" in str(leak.value)
    assert TOKEN not in repr(agent) and TOKEN not in agent.describe()


def test_bad_configuration_is_reported_at_once():
    with pytest.raises(ValueError, match="not an http"):
        cl.agents.http("ftp://x")
    with pytest.raises(ValueError, match="unknown"):
        cl.agents.http("http://127.0.0.1:1/x", response={"txt": "a"})


def test_render_and_get_path_helpers():
    values: dict[str, Any] = {"messages": [1], "text": "t", "turn": 3, "world": {}}
    values.update(case_id="c", instance="i")
    assert render({"a": ["{turn}", "n={turn}"]}, values) == {"a": [3, "n=3"]}
    data = {"a": [{"b": "x"}, {"b": "y"}]}
    assert get_path(data, "a.1.b") == "y"
    assert get_path(data, "$.a[-1].b") == "y"
    assert get_path(data, "a.2.b") is not None  # the absent sentinel, never an IndexError


URL_KEY = "SECRETKEY-in-the-url-9"
URL_PW = "pw-in-the-url-7"


def free_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return int(port)


def test_credentials_in_the_url_never_show():
    url = f"http://user:{URL_PW}@127.0.0.1:{free_port()}/chat?key={URL_KEY}&v=2"
    agent = cl.agents.http(url)
    assert agent.describe() == f"http://user@127.0.0.1:{agent.url.port}/chat?key=***&v=***"
    for text in (repr(agent), agent.name, repr(as_agent(url))):
        assert URL_KEY not in text and URL_PW not in text
    with pytest.raises(AgentError) as info:
        ask(agent, user("hi"))
    assert "could not connect to http://user@127.0.0.1:" in str(info.value)
    assert URL_KEY not in str(info.value) and URL_PW not in str(info.value)
    suite = Suite(id="s", cases=[Case(id="c", input=user("hi"))])
    run = cl.run(suite, url, retries=0, progress=False)
    [row] = run.df.to_dict("records")
    assert row["status"] == "error" and "key=***" in row["error"]
    shown = run.agent + row["error"] + run.to_json()
    assert URL_KEY not in shown and URL_PW not in shown
    with pytest.raises(ValueError) as bad:
        cl.agents.http(f"ftp://user:{URL_PW}@host/x?key={URL_KEY}")
    assert URL_KEY not in str(bad.value) and URL_PW not in str(bad.value)


def test_a_url_credential_echoed_in_a_reply_body_is_masked(base):
    agent = cl.agents.http(f"{base}/leak-query?key={URL_KEY}")
    with pytest.raises(AgentHTTPError) as info:
        ask(agent, user("hi"))
    assert info.value.status == 403
    assert "key *** is not valid" in str(info.value)
    assert URL_KEY not in str(info.value) and URL_KEY not in info.value.url
