"""Faults against a real HTTP server on 127.0.0.1: each affects only its own case."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest
from aiohttp import web

import convlab as cl
from convlab.model import Case, Message, Suite


class FaultServer:
    """An OpenAI-compatible endpoint whose behaviour depends on the last user message."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.loop = asyncio.new_event_loop()
        self.port = _free_port()
        started = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self.thread.start()
        started.wait(10)

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        runner = web.AppRunner(app)
        self.loop.run_until_complete(runner.setup())
        self.loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", self.port).start())
        started.set()
        self.loop.run_forever()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        word = body["messages"][-1]["content"]
        n = self.seen[word] = self.seen.get(word, 0) + 1
        if word == "429" and n == 1:
            return web.json_response(
                {"error": "slow down"}, status=429, headers={"Retry-After": "0"}
            )
        if word == "500":
            return web.json_response({"error": "boom"}, status=500)
        if word == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if word == "slow":  # answers never: the client's timeout ends it
            await asyncio.Event().wait()
        if word == "badjson":
            return web.Response(text="{not json", content_type="application/json")
        if word == "empty":
            return web.json_response({"choices": []})
        reply = {"role": "assistant", "content": f"echo: {word}"}
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "model": body.get("model", "m"),
                "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            }
        )

    def close(self) -> None:
        def stop() -> None:  # end the handlers still sleeping, then the loop
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.call_later(0.1, self.loop.stop)

        self.loop.call_soon_threadsafe(stop)
        self.thread.join(5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server():
    srv = FaultServer()
    yield srv
    srv.close()


def test_each_fault_ends_as_its_own_case_status(server):
    words = ["ok", "429", "500", "drop", "slow", "badjson", "empty", "ok2"]
    suite = Suite(
        id="faults",
        cases=[
            Case(
                id=w, input=[Message(content=w)], assertions=[{"kind": "contains", "value": "echo"}]
            )
            for w in words
        ],
    )
    agent = cl.agents.openai(
        "m", base_url=f"http://127.0.0.1:{server.port}/v1", api_key="sk-test-secret"
    )
    run = cl.run(suite, agent, parallel=8, timeout=1.5, retries=1, progress=False)
    by = {r.case_id: r for r in run.results}
    assert by["ok"].status == by["ok2"].status == "passed"
    assert by["429"].status == "passed" and by["429"].attempts == 2
    assert by["500"].status == "error" and "500" in by["500"].error
    assert by["500"].attempts == 2
    assert by["drop"].status == "error"
    assert by["slow"].status == "timeout"
    assert by["badjson"].status == "error" and "JSON" in by["badjson"].error
    assert by["empty"].status == "error" and "choices" in by["empty"].error
    dumped = run.model_dump_json()
    assert "sk-test-secret" not in dumped and "sk-test-secret" not in repr(agent)
    assert json.loads(dumped)["results"][0]["usage"]["total_tokens"] == 5


def test_an_evaluator_that_raises_is_an_error_of_that_case_only(register_evaluator):
    @register_evaluator("explodes")
    def explodes(ctx, parameters):
        raise ValueError("evaluator bug")

    suite = Suite(
        id="s",
        cases=[
            Case(
                id="bad",
                input=[Message(content="hi")],
                assertions=[{"kind": "custom", "evaluator": "explodes"}],
            ),
            Case(
                id="good",
                input=[Message(content="hi")],
                assertions=[{"kind": "contains", "value": "hi"}],
            ),
        ],
    )
    by = {r.case_id: r for r in cl.run(suite, lambda m: "hi", progress=False).results}
    assert by["bad"].status == "error" and "evaluator bug" in by["bad"].error
    assert by["good"].status == "passed"


def test_unknown_custom_evaluator_is_rejected_before_any_case_runs():
    calls = []
    suite = Suite(
        id="s",
        cases=[
            Case(
                id="a",
                input=[Message(content="hi")],
                assertions=[{"kind": "custom", "evaluator": "nope"}],
            )
        ],
    )
    with pytest.raises(cl.SuiteError, match="nope"):
        cl.run(suite, lambda m: calls.append(m) or "x", progress=False)
    assert calls == []
