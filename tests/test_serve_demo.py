"""serve-demo: agents behind an OpenAI-compatible endpoint on 127.0.0.1 (uvicorn in a thread),
answering real `agents.openai` calls end to end: text, instructions, tool calls with their
results, models, errors, streaming, shared worlds, the demo agents and the missing extra."""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

import convlab as cl
from convlab.agents import serve as serve_mod
from convlab.agents.protocol import AgentContext
from convlab.agents.serve import DemoServer
from convlab.agents.simulator import LLMSimulator, SimulatorTurn
from convlab.errors import AgentHTTPError, MissingDependencyError
from convlab.model.conversation import Message, Reply, ToolCall


def echo(messages, ctx):
    return f"echo: {messages[-1]['content']} | instructions: {ctx.instructions}"


def filer(messages, ctx):
    ctx.world["filed"] = ctx.world.get("filed", 0) + 1
    return Reply(
        text=f"Filed #{ctx.world['filed']}.",
        tool_calls=[ToolCall("create_expense", {"amount": 3500}, {"reference": "EXP-1"})],
    )


def boom(messages):
    raise RuntimeError("the agent broke")


def user_llm(messages):
    return json.dumps({"message": "Travel, $3500", "goal_achieved": False, "reasoning": "r"})


@pytest.fixture(scope="module")
def url():
    agents = {"echo": echo, "filer": filer, "boom": boom, "user-llm": user_llm}
    server = DemoServer(agents)
    assert server.host == "127.0.0.1"
    with server as base:
        yield base


def ask(agent, text: str, ctx: AgentContext | None = None):
    ctx = ctx or AgentContext()

    async def go():
        try:
            session = await agent.open(ctx)
            return await session.send([Message(role="user", content=text)], ctx)
        finally:
            await agent.aclose()

    return asyncio.run(go())


def get_json(url: str, body: Any = None) -> tuple[int, Any]:
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as err:
        raw, status = err.read(), err.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode()


def test_an_openai_agent_talks_to_a_served_agent(url):
    agent = cl.agents.openai("echo", base_url=url, api_key="k", system="Be brief.")
    obs = ask(agent, "Hello", AgentContext(instructions="Case rules."))
    assert obs.text == "echo: Hello | instructions: Be brief.\n\nCase rules."
    assert obs.usage is not None and obs.usage.total_tokens > 0


def test_served_tool_calls_come_back_with_their_results(url):
    obs = ask(cl.agents.openai("demo:filer", base_url=url), "file it")
    assert obs.text == "Filed #1."
    assert [(c.name, c.arguments, c.result) for c in obs.tool_calls] == [
        ("create_expense", {"amount": 3500}, {"reference": "EXP-1"})
    ]
    status, body = get_json(f"{url}/chat/completions", {"model": "filer", "messages": [{}]})
    assert status == 200
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function"
    assert json.loads(call["function"]["arguments"]) == {"amount": 3500}


def test_models_are_listed(url):
    status, body = get_json(f"{url}/models")
    assert status == 200
    assert [m["id"] for m in body["data"]] == ["echo", "filer", "boom", "user-llm"]


def test_errors_are_openai_shaped(url):
    with pytest.raises(AgentHTTPError) as info:
        ask(cl.agents.openai("nope", base_url=url), "hi")
    assert info.value.status == 404
    assert "unknown model 'nope'; served: echo, filer, boom, user-llm" in str(info.value)
    with pytest.raises(AgentHTTPError) as broke:
        ask(cl.agents.openai("boom", base_url=url), "hi")
    assert broke.value.status == 500 and broke.value.retryable
    assert "agent error: RuntimeError: the agent broke" in str(broke.value)
    status, body = get_json(f"{url}/chat/completions", b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body = get_json(url.removesuffix("/v1") + "/elsewhere")
    assert status == 404


def test_streaming_requests_get_server_sent_events(url):
    req = {"model": "echo", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    status, text = get_json(f"{url}/chat/completions", req)
    assert status == 200
    events = [line.removeprefix("data: ") for line in text.splitlines() if line]
    assert events[-1] == "[DONE]"
    first = json.loads(events[0])
    assert first["object"] == "chat.completion.chunk"
    assert first["choices"][0]["delta"]["content"].startswith("echo: hi")


def test_a_conversation_named_by_user_keeps_its_world(url):
    def count(user: str | None) -> str:
        body: dict[str, Any] = {"model": "filer", "messages": [{"role": "user", "content": "x"}]}
        if user:
            body["user"] = user
        return get_json(f"{url}/chat/completions", body)[1]["choices"][0]["message"]["content"]

    assert [count("alice"), count("alice"), count("bob"), count(None), count(None)] == [
        "Filed #1.",
        "Filed #2.",
        "Filed #1.",
        "Filed #1.",
        "Filed #1.",
    ]


def test_an_llm_simulator_over_a_served_model(url):
    sim = LLMSimulator(cl.agents.openai("user-llm", base_url=url))
    ctx = AgentContext(persona="New employee", goal="file an expense", metadata={"turn_number": 2})

    async def go() -> SimulatorTurn:
        try:
            return await sim.simulate([Message(role="assistant", content="Which type?")], ctx)
        finally:
            await sim.aclose()

    assert asyncio.run(go()) == SimulatorTurn("Travel, $3500", False, "r")


def test_the_demo_agents_are_served_by_default():
    with DemoServer(latency_ms=1) as base:
        status, body = get_json(f"{base}/models")
        assert status == 200
        assert [m["id"] for m in body["data"]] == [
            "catalog",
            "cloud_drive",
            "expense",
            "expense_lite",
            "finance",
        ]
        status, body = get_json(
            f"{base}/chat/completions", {"model": "demo:expens", "messages": []}
        )
        assert status == 404
        assert body["error"]["message"] == (
            "unknown model 'demo:expens'; served: catalog, cloud_drive, expense, expense_lite, "
            "finance"
        )
        obs = ask(cl.agents.openai("demo:expense", base_url=base), "I want to submit an expense")
        assert obs.text


def test_main_rejects_a_bad_agent_option(capsys):
    with pytest.raises(SystemExit) as info:
        serve_mod.main(["--agent", "no-equals-sign"])
    assert info.value.code == 2
    assert "--agent takes NAME=SPEC" in capsys.readouterr().err


def test_without_uvicorn_the_error_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'convlab\[serve\]'"):
        DemoServer({"echo": echo})
    assert serve_mod.main(["--port", "0"]) == 2
    assert "convlab[serve]" in capsys.readouterr().err


def _raw_post(port: int, head_extra: str, body: bytes) -> str:
    """POST over a raw socket (a client that lies about or trickles its body): the status
    code the server answers."""
    import socket

    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{head_extra}\r\n"
        sock.sendall(head.encode() + body)
        return sock.recv(65536).decode("latin-1").split(" ", 2)[1]
    finally:
        sock.close()


def test_serve_demo_refuses_a_huge_or_trickled_body() -> None:
    """A 300 MB body is refused from its Content-Length (413, nothing buffered), a body
    larger than the limit sent without one too; a body that does not arrive within the
    server's body timeout is a 408, not a request held open."""
    server = DemoServer(body_timeout_s=0.5).start()
    try:
        assert _raw_post(server.port, "Content-Length: 300000000\r\n", b"{") == "413"
        chunk = b"x" * (1024 * 1024)
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(9))
        assert _raw_post(server.port, "Transfer-Encoding: chunked\r\n", chunked) == "413"
        assert _raw_post(server.port, "Content-Length: 100\r\n", b'{"model"') == "408"
        agent = cl.agents.openai("demo:expense", base_url=server.url, api_key="k")
        assert "expense" in cl.ask(agent, "I want to submit an expense").text.lower()
    finally:
        server.stop()


def test_expense_lite_follows_only_the_rules_early_in_a_long_prompt():
    short = "Always ask the user for a receipt."
    long = (
        "You are an expense assistant for a large company with many offices and teams. "
        "Be friendly and brief, and help people file their expenses. " + short
    )
    said = {}
    with DemoServer(latency_ms=1) as base:
        for model in ("expense", "expense_lite"):
            for name, system in (("short", short), ("long", long)):
                agent = cl.agents.openai(model, base_url=base, api_key="x", system=system)
                said[model, name] = cl.ask(agent, "File a travel expense of $100").text
    assert all("receipt" in said["expense", n] for n in ("short", "long"))
    assert "receipt" in said["expense_lite", "short"]
    assert "receipt" not in said["expense_lite", "long"]


def test_a_100k_deep_json_body_is_a_400_not_a_500(url):
    deep = b'{"model": "echo", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, body = get_json(f"{url}/chat/completions", deep)
    assert status == 400, body
    assert body["error"]["type"] == "invalid_request_error"
    assert "nested too deep" in body["error"]["message"]
    # the server is still up and answers the next request
    ok = ask(cl.agents.openai("echo", base_url=url), "hi")
    assert ok.text
