"""A misbehaving HTTP endpoint on 127.0.0.1, shared by the tests and the benchmarks.

Several tests (blame, engine faults, adaptive concurrency, the http and openai agents) and
`benchmarks/bench_aimd.py` need a real server that answers with faults: errors, 429 with
`Retry-After`, replies that never come, garbage, a dropped connection, a rate limit, or a
plain chat-completions reply. They share
this one server so the thread, loop, port and shutdown are written once, and each test
states only the behaviour it needs (a test with its own handler passes it in):

    with FaultServer(chat_faults({"500": error(500), "slow": hang})) as server:
        agent = cl.agents.openai("m", base_url=server.base + "/v1")
        ...
        server.counts.seen["500"]  # how many requests asked for it

    with FaultServer(limited(capacity=8, delay=0.05), path="/chat") as server:
        cl.agents.http(server.url) ...  # 429 beyond 8 in flight
        server.counts.log  # per request, in arrival order: was it rejected

Only 127.0.0.1 is ever bound. The benchmarks import it with `tests/` on `sys.path`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Counts:
    """What the server saw; read it after (or during) a run."""

    in_flight: int = 0
    accepted: int = 0
    """Requests given the normal answer."""
    rejected: int = 0
    """Requests given a fault (a 429 of `limited`, any fault of `chat_faults`)."""
    log: list[bool] = field(default_factory=list)
    """`limited`: per request, in arrival order, was it rejected."""
    seen: Counter[str] = field(default_factory=Counter)
    """`chat_faults`: requests per last-message content."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    """What a handler of a test's own keeps of each request (headers, body...)."""


Handler = Callable[[web.Request, Counts], Awaitable[web.StreamResponse]]
"""What answers every request: the request and the server's counts."""

Fault = Callable[[web.Request, int], Awaitable[web.StreamResponse | None]]
"""One misbehaviour of `chat_faults`: the request and how many times its word has come
(1 the first time); None lets the request through to the normal reply."""


class FaultServer:
    """aiohttp.web on a free port of 127.0.0.1, on its own loop in a daemon thread.

    A context manager: entering starts it and returns it (`url`, `base`, `port`, `counts`);
    leaving cancels the handlers still waiting (a `hang` never ends by itself) and stops it.
    `path` is an aiohttp route (`/{shape}`, `/{tail:.*}` take any path: `url` is then
    meaningless, use `base`); `method` "*" takes any method.
    """

    def __init__(
        self, handler: Handler, path: str = "/v1/chat/completions", method: str = "POST"
    ) -> None:
        self.handler, self.path, self.method = handler, path, method
        self.counts = Counts()
        self.base = self.url = ""
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        return await self.handler(request, self.counts)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route(self.method, self.path, self._handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = int(sock.getsockname()[1])
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = self.base + self.path
        await web.SockSite(self.runner, sock).start()

    async def _stop(self) -> None:
        here = asyncio.current_task()
        for task in asyncio.all_tasks():
            if task is not here:
                task.cancel()
        if self.runner is not None:
            await self.runner.cleanup()

    def __enter__(self) -> FaultServer:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


# --- chat completions whose answer the last message picks --------------------------------


def chat_reply(text: str, model: str = "m") -> web.Response:
    """An OpenAI chat-completions answer with `text` and a usage of 5 tokens."""
    reply = {"role": "assistant", "content": text}
    return web.json_response(
        {
            "id": "x",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )


def chat_faults(faults: Mapping[str, Fault], route: Callable[[str], str] = str) -> Handler:
    """A chat-completions endpoint: the last message's content (through `route`, to map
    several contents to one fault) picks a fault; any other answers `echo: <content>`."""

    async def handle(request: web.Request, counts: Counts) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        word = body["messages"][-1]["content"]
        counts.seen[word] += 1
        fault = faults.get(route(word))
        answer = await fault(request, counts.seen[word]) if fault is not None else None
        if answer is None:
            counts.accepted += 1
            return chat_reply(f"echo: {word}", body.get("model", "m"))
        counts.rejected += 1
        return answer

    return handle


_SAYS = {401: "bad key", 429: "slow down", 500: "boom", 503: "busy"}


def error(status: int, retry_after: str | None = None, times: int | None = None) -> Fault:
    """Answers `status` with a JSON error (and `Retry-After` if given); only the first
    `times` requests if given, the later ones get the normal reply."""
    headers = {"Retry-After": retry_after} if retry_after is not None else None

    async def fault(request: web.Request, n: int) -> web.StreamResponse | None:
        if times is not None and n > times:
            return None
        said = {"error": _SAYS.get(status, "error")}
        return web.json_response(said, status=status, headers=headers)

    return fault


async def hang(request: web.Request, n: int) -> web.StreamResponse:
    """Answers never: the client's timeout ends it (and leaving the server, the handler)."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def drop(request: web.Request, n: int) -> web.StreamResponse:
    """Closes the connection without an answer."""
    assert request.transport is not None
    request.transport.close()
    return web.Response()


async def bad_json(request: web.Request, n: int) -> web.StreamResponse:
    """Says it is JSON and is not."""
    return web.Response(text="{not json", content_type="application/json")


async def no_choices(request: web.Request, n: int) -> web.StreamResponse:
    """Valid JSON with no choice in it."""
    return web.json_response({"choices": []})


# --- a rate-limited endpoint -------------------------------------------------------------


def limited(capacity: int, delay: float, retry_after: str | None = None) -> Handler:
    """429 (with `Retry-After` if given) to any request beyond `capacity` in flight; the
    others answer `{"text": "ok <last message>"}` after `delay` seconds."""
    headers = {"Retry-After": retry_after} if retry_after is not None else None

    async def handle(request: web.Request, c: Counts) -> web.StreamResponse:
        c.in_flight += 1
        try:
            if c.in_flight > capacity:
                c.rejected += 1
                c.log.append(True)
                return web.json_response({"error": "slow down"}, status=429, headers=headers)
            c.log.append(False)
            body = await request.json()
            await asyncio.sleep(delay)
            c.accepted += 1
            return web.json_response({"text": "ok " + body["messages"][-1]["content"]})
        finally:
            c.in_flight -= 1

    return handle
