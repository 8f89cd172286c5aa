"""agents.openai against a real chat-completions server on 127.0.0.1 (aiohttp.web in a thread):
replies, the tool loop and its bound, usage, every fault as its typed error, the key kept out
of every repr, description, result and error, and the client following the event loop."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from typing import Any

import pytest
from aiohttp import web
from fault_server import Counts, FaultServer, Handler, hang

import convlab as cl
from convlab.agents.openai_agent import OpenAIAgent
from convlab.agents.protocol import AgentContext, as_agent
from convlab.agents.tools import as_tools
from convlab.errors import AgentError, AgentHTTPError, AgentResponseError, AgentTimeoutError
from convlab.model.conversation import Message

KEY = "sk-test-SECRET-0123456789"
TOOL = re.compile(r"tool:(\w+)(\{[^}]*\})?")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content)
    return content or ""


def _reply(message: dict, finish: str = "stop") -> web.Response:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return web.json_response(body)


def _calls(names_args: list[tuple[str, str]]) -> web.Response:
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a or "{}"}}
        for i, (n, a) in enumerate(names_args)
    ]
    return _reply({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls")


async def fake_model(request: web.Request, counts: Counts) -> web.StreamResponse:
    """A tiny chat model: the last message says what to do (`fault:...`, `tool:NAME{...}`)."""
    body = await request.json()
    seen = {"headers": dict(request.headers), "body": body, "path": request.path}
    counts.requests.append({**seen, "query": dict(request.query)})
    messages = body["messages"]
    last = messages[-1]
    first_user = next(m for m in messages if m["role"] == "user")
    said = _text(first_user.get("content"))
    if last["role"] == "tool":
        if "loop:" in said:
            return _calls([(said.split("loop:")[1].split()[0], '{"a": 1, "b": 1}')])
        results = [m["content"] for m in messages if m["role"] == "tool"]
        return _reply({"role": "assistant", "content": "results: " + " | ".join(results)})
    text = _text(last.get("content"))
    if text == "fault:429":
        return web.json_response(
            {"error": {"message": "rate limited"}}, status=429, headers={"Retry-After": "7"}
        )
    if text == "fault:500":
        return web.Response(status=500, text="upstream exploded")
    if text == "fault:drop":
        assert request.transport is not None
        request.transport.close()
        return web.Response(text="never sent")
    if text == "fault:slow":  # never answers: the server's shutdown ends it
        return await hang(request, 1)
    if text == "fault:badjson":
        return web.Response(text="<html>oops, not JSON" + "x" * 500, content_type="text/html")
    if text == "fault:nochoices":
        return web.json_response({"id": "x", "choices": []})
    if text == "fault:echo-url":
        return web.Response(status=401, text=f"bad api-key: {request.query['api-key']}")
    if text == "fault:echo-key":
        return web.Response(status=401, text=f"bad key: {request.headers['Authorization']}")
    if text.startswith("loop:"):
        return _calls([(text.split("loop:")[1].split()[0], '{"a": 1, "b": 1}')])
    if found := TOOL.findall(text):
        return _calls(found)
    return _reply({"role": "assistant", "content": f"You said: {text}", "refusal": None})


class Server(FaultServer):
    """A handler (the fake model unless given) on any path and method: `url` is its /v1 base
    URL, `seen` the requests the fake model kept. test_engine_hardening and
    test_report_formats use it too."""

    def __init__(self, handler: Handler = fake_model) -> None:
        super().__init__(handler, path="/{tail:.*}", method="*")
        self.seen = self.counts.requests

    def __enter__(self) -> Server:
        super().__enter__()
        self.url = self.base + "/v1"
        return self


@pytest.fixture(scope="module")
def server():
    with Server() as srv:
        yield srv


def ask(agent, text: str, ctx: AgentContext | None = None):
    """One user turn through a fresh session, on a fresh loop."""
    ctx = ctx or AgentContext()

    async def go():
        session = await agent.open(ctx)
        try:
            return await session.send([Message(role="user", content=text)], ctx)
        finally:
            await session.close()
            await agent.aclose()

    return asyncio.run(go())


def make(server, **kw) -> OpenAIAgent:
    return cl.agents.openai("test-model", base_url=server.url, api_key=KEY, **kw)


def test_plain_reply_text_usage_messages_and_request(server):
    server.seen.clear()
    agent = make(server, system="You are terse.", temperature=0.2)
    obs = ask(agent, "Hello", AgentContext(instructions="Answer in English."))
    assert obs.text == "You said: Hello"
    assert obs.tool_calls == []
    assert [m.role for m in obs.messages] == ["assistant"]
    assert obs.usage is not None and obs.usage.total_tokens == 15
    assert obs.latency_ms is not None and obs.latency_ms > 0
    [req] = server.seen
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    assert req["body"]["model"] == "test-model"
    assert req["body"]["temperature"] == 0.2
    assert "tools" not in req["body"]
    assert req["body"]["messages"][0] == {
        "role": "system",
        "content": "You are terse.\n\nAnswer in English.",
    }


def test_tool_calls_run_locally_and_the_model_is_called_again(server):
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    async def remember(note: str, ctx: AgentContext) -> dict:
        """Remember a note in the world state."""
        ctx.world.setdefault("notes", []).append(note)
        return {"saved": note}

    server.seen.clear()
    ctx = AgentContext(world={})
    agent = make(server, tools=[add, remember])
    obs = ask(agent, 'tool:add{"a": 2, "b": 3} tool:remember{"note": "hi"}', ctx)
    assert [(c.name, c.arguments, c.result) for c in obs.tool_calls] == [
        ("add", {"a": 2, "b": 3}, 5),
        ("remember", {"note": "hi"}, {"saved": "hi"}),
    ]
    assert ctx.world == {"notes": ["hi"]}
    assert obs.text == 'results: 5 | {"saved":"hi"}'
    assert [m.role for m in obs.messages] == ["assistant", "tool", "tool", "assistant"]
    assert obs.messages[1].tool_call_id == "call_0"
    assert obs.usage is not None and obs.usage.total_tokens == 30  # summed over two calls
    assert len(server.seen) == 2
    tools = {t["function"]["name"]: t["function"] for t in server.seen[0]["body"]["tools"]}
    assert tools["add"]["description"] == "Add two numbers."
    assert tools["add"]["parameters"]["properties"] == {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
    }
    assert "ctx" not in tools["remember"]["parameters"]["properties"]
    sent_back = server.seen[1]["body"]["messages"]
    assert [m["role"] for m in sent_back] == ["user", "assistant", "tool", "tool"]


def test_a_stuck_sync_tool_times_out_and_the_run_still_ends(server):
    release = threading.Event()
    guard = threading.Timer(30.0, release.set)  # a regression fails rather than hangs
    guard.daemon = True
    guard.start()

    def wait(seconds: int) -> str:
        """Wait for something that never comes."""
        release.wait()
        return "too late"

    case = cl.Case(id="stuck", input=[Message(role="user", content='tool:wait{"seconds": 1}')])
    try:
        run = cl.run(
            cl.Suite(id="s", cases=[case]), make(server, tools=[wait]), timeout=0.3, progress=False
        )
        still_stuck = not release.is_set()
    finally:
        guard.cancel()
        release.set()
    [row] = run.df.to_dict("records")
    assert row["status"] == "timeout", row["error"]
    assert still_stuck, "run() waited for the stuck tool to return"


def test_the_tool_loop_stops_at_max_agent_passes(server):
    def add(a: int, b: int) -> int:
        return a + b

    server.seen.clear()
    obs = ask(make(server, tools=[add]), "loop:add", AgentContext(max_agent_passes=3))
    assert len(server.seen) == 3
    assert [c.result for c in obs.tool_calls] == [2, 2, 2]
    assert obs.status == "incomplete"

    server.seen.clear()
    obs = ask(make(server, tools=[add]), "loop:add")  # None: the default bound of 10
    assert len(server.seen) == 10
    assert obs.status == "incomplete"


def test_tool_calls_without_a_local_function_are_returned_not_run(server):
    server.seen.clear()
    declared = {"type": "function", "function": {"name": "lookup", "parameters": {}}}
    obs = ask(make(server, tools=[declared]), 'tool:lookup{"q": "x"}')
    assert [(c.name, c.arguments, c.result) for c in obs.tool_calls] == [
        ("lookup", {"q": "x"}, None)
    ]
    assert obs.text is None
    assert len(server.seen) == 1
    assert server.seen[0]["body"]["tools"] == [declared]


def test_bad_tool_arguments_go_back_to_the_model_as_an_error(server):
    def add(a: int, b: int) -> int:
        return a + b

    def boom() -> None:
        raise RuntimeError("disk full")

    obs = ask(make(server, tools=[add, boom]), 'tool:add{"a": "two"} tool:boom')
    add_call, boom_call = obs.tool_calls
    assert add_call.error is not None and "invalid arguments" in add_call.error
    assert "a: Input should be a valid integer" in add_call.error
    assert "b: Field required" in add_call.error
    assert boom_call.error == "RuntimeError: disk full"
    assert obs.text is not None and "error: RuntimeError: disk full" in obs.text


@pytest.mark.parametrize(
    ("say", "kind", "retryable", "words"),
    [
        ("fault:429", AgentHTTPError, True, ["HTTP 429", "/chat/completions", "rate limited"]),
        ("fault:500", AgentHTTPError, True, ["HTTP 500", "upstream exploded"]),
        ("fault:drop", AgentError, True, ["connection to", "dropped"]),
        ("fault:slow", AgentTimeoutError, True, ["no answer from", "0.3 s", "timeout"]),
        ("fault:badjson", AgentResponseError, False, ["malformed JSON", "<html>oops"]),
        ("fault:nochoices", AgentResponseError, False, ["no choices"]),
    ],
)
def test_faults_become_typed_errors(server, say, kind, retryable, words):
    with pytest.raises(kind) as info:
        ask(make(server, timeout=0.3), say)
    err = info.value
    assert type(err) is kind
    assert err.retryable is retryable
    for word in words:
        assert word in str(err)


def test_retry_after_is_parsed_and_bodies_are_cut(server):
    with pytest.raises(AgentHTTPError) as info:
        ask(make(server), "fault:429")
    assert (info.value.status, info.value.retry_after) == (429, 7.0)
    with pytest.raises(AgentResponseError) as bad:
        ask(make(server), "fault:badjson")
    quoted = str(bad.value).split(": ", 1)[1]
    assert len(quoted) <= 202  # the first 200 characters, quoted


def test_refused_connection_is_a_retryable_agent_error():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    agent = cl.agents.openai("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY)
    with pytest.raises(AgentError) as info:
        ask(agent, "hi")
    assert info.value.retryable is True
    assert "could not connect to" in str(info.value)


def test_the_key_never_shows(server):
    agent = make(server)
    for text in (repr(agent), agent.describe(), str(agent.__dict__), repr(agent._key)):
        assert KEY not in text
    with pytest.raises(AgentHTTPError) as info:
        ask(agent, "fault:echo-key")
    err = info.value
    assert info.value.status == 401
    assert KEY not in str(err) and KEY not in err.body and KEY not in repr(err)
    assert "bad key: Bearer ***" in str(err)
    obs = ask(agent, "Hello")
    assert KEY not in obs.to_json()


def test_credentials_in_the_base_url_never_show(server):
    secret = "SECRET2-in-the-query-31"
    agent = cl.agents.openai("m", base_url=f"{server.url}?api-key={secret}", api_key=KEY)
    assert agent.describe() == f"openai:m @ {server.url}?api-key=***"
    assert secret not in repr(agent)
    server.seen.clear()
    assert ask(agent, "Hello").text == "You said: Hello"
    assert server.seen[-1]["path"] == "/v1/chat/completions"  # the query stays a query
    assert server.seen[-1]["query"] == {"api-key": secret}
    with pytest.raises(AgentHTTPError) as info:
        ask(agent, "fault:echo-url")
    assert "bad api-key: ***" in str(info.value)
    assert secret not in str(info.value) and "api-key=***" in str(info.value)


def test_configuration_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/")
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    server.seen.clear()
    agent = as_agent("openai:")
    assert agent.describe() == f"openai:env-model @ {server.url}"
    assert ask(agent, "Hi").text == "You said: Hi"
    assert server.seen[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert as_agent("openai:gpt-x").describe().startswith("openai:gpt-x @ ")
    monkeypatch.delenv("OPENAI_MODEL")
    with pytest.raises(ValueError, match="OPENAI_MODEL"):
        as_agent("openai:")


def test_default_base_url_and_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = cl.agents.openai("gpt-4o-mini")
    assert agent.describe() == "openai:gpt-4o-mini"
    assert agent.url == "https://api.openai.com/v1/chat/completions"
    assert "authorization" not in dict(agent._http.headers)


def test_one_agent_follows_the_running_loop(server):
    """Runs on two loops one after the other, then on a worker-thread loop, without aclose."""
    agent = make(server)

    async def one(text: str) -> str | None:
        ctx = AgentContext()
        session = await agent.open(ctx)
        return (await session.send([Message(role="user", content=text)], ctx)).text

    assert asyncio.run(one("a")) == "You said: a"
    assert asyncio.run(one("b")) == "You said: b"
    out: list[str | None] = []
    worker = threading.Thread(target=lambda: out.append(asyncio.run(one("c"))))
    worker.start()
    worker.join(10)
    assert out == ["You said: c"]
    asyncio.run(agent.aclose())


def test_many_requests_in_flight_share_one_pool(server):
    agent = make(server)

    async def go() -> list[str | None]:
        async def one(i: int) -> str | None:
            ctx = AgentContext(instance=str(i))
            session = await agent.open(ctx)
            return (await session.send([Message(role="user", content=f"n{i}")], ctx)).text

        try:
            return await asyncio.gather(*(one(i) for i in range(40)))
        finally:
            await agent.aclose()

    assert asyncio.run(go()) == [f"You said: n{i}" for i in range(40)]


def test_the_factory_survives_importing_the_module():
    import convlab.agents.openai_agent as module

    assert isinstance(module.OpenAIAgent("m", base_url="http://127.0.0.1:9/v1"), OpenAIAgent)
    assert isinstance(cl.agents.openai("m", base_url="http://127.0.0.1:9/v1"), OpenAIAgent)


def test_tool_schemas_from_signatures():
    from typing import Literal

    def file_expense(
        amount: float, category: Literal["travel", "meals"], note: str = "", ctx: Any = None
    ) -> dict:
        """File an expense report.

        Args:
            amount: Amount in dollars.
            category: What kind of expense.
        """
        return {}

    [tool] = as_tools([file_expense]).values()
    spec = tool.definition()["function"]
    assert spec["name"] == "file_expense"
    assert spec["description"] == "File an expense report."
    assert spec["parameters"] == {
        "type": "object",
        "properties": {
            "amount": {"type": "number", "description": "Amount in dollars."},
            "category": {
                "type": "string",
                "enum": ["travel", "meals"],
                "description": "What kind of expense.",
            },
            "note": {"type": "string", "default": ""},
        },
        "required": ["amount", "category"],
        "additionalProperties": False,
    }
    with pytest.raises(ValueError, match="two tools are named"):
        as_tools([file_expense, file_expense])
    with pytest.raises(TypeError, match="not a tool"):
        as_tools([42])


def test_results_are_json_safe(server):
    def when() -> object:
        import datetime

        return {"at": datetime.date(2024, 1, 2)}

    obs = ask(make(server, tools=[when]), "tool:when")
    assert json.loads(obs.messages[1].content or "") == {"at": "2024-01-02"}


def test_earlier_tool_calls_without_results_get_tool_messages(server):
    """Chat APIs reject a history whose tool calls have no tool message: fill the gaps."""
    server.seen.clear()
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    served = dict(call, id="c2", result={"found": 1})
    answered = dict(call, id="c3")
    history = [
        Message(role="user", content="first"),
        Message(role="assistant", content=None, tool_calls=[call, served]),
        Message(role="user", content="second"),
        Message(role="assistant", content="ok", tool_calls=[answered]),
        Message(role="tool", tool_call_id="c3", content="already answered"),
        Message(role="user", content="third"),
    ]

    async def go():
        ctx = AgentContext()
        agent = make(server)
        session = await agent.open(ctx)
        try:
            return await session.send(history, ctx)
        finally:
            await agent.aclose()

    assert asyncio.run(go()).text == "You said: third"
    sent = server.seen[0]["body"]["messages"]
    assert [(m["role"], m.get("tool_call_id"), m.get("content")) for m in sent] == [
        ("user", None, "first"),
        ("assistant", None, None),
        ("tool", "c1", "(not run here)"),
        ("tool", "c2", '{"found":1}'),
        ("user", None, "second"),
        ("assistant", None, "ok"),
        ("tool", "c3", "already answered"),
        ("user", None, "third"),
    ]


def test_a_key_and_url_credentials_together_send_the_key(server):
    """aiohttp refuses an Authorization header beside URL credentials: the key wins."""
    server.seen.clear()
    url = server.url.replace("http://", "http://user:secretpw@")
    agent = cl.agents.openai("test-model", base_url=url, api_key=KEY)
    obs = ask(agent, "Hello")
    assert obs.text == "You said: Hello"
    [req] = server.seen
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    assert "secretpw" not in agent.describe()
