"""`convlab serve-demo`: agents behind an OpenAI-compatible endpoint on 127.0.0.1.

`POST /v1/chat/completions` answers with the agent named by `model` (`demo:expense` or
`expense` for the built-in demo agents, or any name given in `agents=`); `GET /v1/models`
lists them. Any OpenAI client, `convlab.agents.openai(...)` included, can then test a demo
agent over the wire. The served agent's tool calls (already run on the server, which owns the
world state) come back as OpenAI `tool_calls`, with their results under a `result` key that
convlab's OpenAI agent reads.

The system messages of a request become the agent's `ctx.instructions`. Each request gets a
fresh world state, unless it names a conversation with the `user` field or an
`x-convlab-session` header: requests naming the same one share a world.

What does not cross the OpenAI wire: open interactions (choice options) and selections, facts,
and the world state itself, so suites that check those (the catalog and cloud_drive examples)
pass only in process; expense and finance give the same results over the wire as in process.

The app is a few lines of raw ASGI served by uvicorn (the `serve` extra), with no framework.
Run it with `convlab serve-demo` or `python -m convlab.agents.serve [--port N] [--latency-ms MS]`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from convlab.agents._transport import dumps, loads
from convlab.agents.demos import get as demo_agent
from convlab.agents.demos import names as demo_names
from convlab.agents.protocol import Agent, AgentContext, as_agent
from convlab.errors import BodyRejected, DemoAgentNotFound, MissingDependencyError, UnknownNameError
from convlab.model.conversation import Message
from convlab.model.records import Observation
from convlab.model.tracebacks import error_text

__all__ = ["DemoApp", "DemoServer", "main", "serve"]

HOST = "127.0.0.1"
_MAX_WORLDS = 1000

MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest request body served (a chat request is kilobytes); larger is a 413."""

BODY_TIMEOUT_S = 10.0
"""The longest a request body may take to arrive; longer (a client trickling it) is a 408."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _demo_agent(name: str) -> Agent:
    try:
        return demo_agent(name)
    except UnknownNameError:
        raise DemoAgentNotFound(name) from None


class DemoApp:
    """The ASGI app: OpenAI chat completions answered by local agents."""

    def __init__(
        self,
        agents: Mapping[str, Any] | None = None,
        latency_ms: float = 0.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        body_timeout_s: float = BODY_TIMEOUT_S,
    ) -> None:
        self.max_body_bytes, self.body_timeout_s = max_body_bytes, body_timeout_s
        self.agents: dict[str, Agent] = {k: as_agent(v) for k, v in (agents or {}).items()}
        self.use_demos = agents is None
        self.latency_s = max(0.0, latency_ms) / 1000.0
        self.worlds: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._ids = itertools.count(1)

    def models(self) -> list[str]:
        """The model names this app answers to."""
        names = list(self.agents)
        if self.use_demos:
            names += [n for n in demo_names() if n not in self.agents]
        return names

    def agent(self, model: str) -> Agent:
        """The agent for a model name (`demo:` prefix optional)."""
        name = model.removeprefix("demo:")
        for key in (model, name):
            if key in self.agents:
                return self.agents[key]
        if not self.use_demos:
            raise DemoAgentNotFound(model)
        found = self.agents[name] = _demo_agent(name)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"].rstrip("/"), scope["method"]
        if method == "POST" and path.endswith("/chat/completions"):
            try:
                raw = await self.body(scope, receive)
            except BodyRejected as bad:  # the rest of the body is never read: close the connection
                body = _error(str(bad), "invalid_request_error")
                await _respond(send, bad.status, body, "application/json", close=True)
                return
            status, body, ctype = await self.completion(scope, raw)
        elif method == "GET" and path.endswith("/models"):
            data = [{"id": n, "object": "model", "owned_by": "convlab"} for n in self.models()]
            status, body, ctype = 200, dumps({"object": "list", "data": data}), "application/json"
        else:
            status, body = 404, _error(f"no route for {method} {path}", "not_found")
            ctype = "application/json"
        await _respond(send, status, body, ctype)

    async def body(self, scope: Scope, receive: Receive) -> bytes:
        """The request body, at most `max_body_bytes`, arrived within `body_timeout_s`.

        Raises:
            BodyRejected: 413 for a larger body (a Content-Length that says so is refused before
                any of it is read), 408 for one that does not arrive in time.
        """
        limit = self.max_body_bytes
        too_big = f"request body larger than {limit} bytes (the demo server's limit)"
        for name, value in scope.get("headers") or []:
            declared = value.strip() if name.lower() == b"content-length" else b""
            if declared.isdigit() and int(declared) > limit:
                raise BodyRejected(413, too_big)
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.body_timeout_s):
                while True:
                    msg = await receive()
                    chunk = msg.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise BodyRejected(413, too_big)
                    chunks.append(chunk)
                    if not msg.get("more_body"):
                        return b"".join(chunks)
        except TimeoutError:
            raise BodyRejected(
                408,
                f"request body not received within {self.body_timeout_s:g} s "
                f"({size} bytes arrived)",
            ) from None

    async def completion(self, scope: Scope, raw: bytes) -> tuple[int, bytes, str]:
        """Answer one chat-completions request: (status, body, content type)."""
        try:
            req = loads(raw)
            if not isinstance(req, dict) or not isinstance(req.get("messages"), list):
                raise ValueError("the body must be a JSON object with a 'messages' list")
            messages = [Message.model_validate(m) for m in req["messages"]]
        except ValueError as exc:
            return 400, _error(f"bad request: {exc}", "invalid_request_error"), "application/json"
        model = str(req.get("model") or "")
        try:
            agent = self.agent(model)
        except DemoAgentNotFound:
            served = ", ".join(self.models()) or "none"
            msg = f"unknown model {model!r}; served: {served}"
            return 404, _error(msg, "model_not_found"), "application/json"
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        try:
            obs = await self._answer(agent, messages, self._world(scope, req))
        except Exception as exc:
            msg = f"agent error: {error_text(exc)}"
            return 500, _error(msg, "server_error"), "application/json"
        completion = _completion(obs, model, messages, next(self._ids))
        if req.get("stream"):
            return 200, _sse(completion), "text/event-stream"
        return 200, dumps(completion), "application/json"

    async def _answer(
        self, agent: Agent, messages: list[Message], world: dict[str, Any]
    ) -> Observation:
        system = [m.text() for m in messages if m.role in ("system", "developer")]
        rest = [m for m in messages if m.role not in ("system", "developer")]
        ctx = AgentContext(
            world=world,
            turn=max(0, sum(m.role == "user" for m in rest) - 1),
            instructions="\n\n".join(system) or None,
            instance=f"serve-{next(self._ids)}",
        )
        session = await agent.open(ctx)
        try:
            return await session.send(rest, ctx)
        finally:
            await session.close()

    def _world(self, scope: Scope, req: dict[str, Any]) -> dict[str, Any]:
        key = req.get("user")
        for name, value in scope.get("headers", []):
            if name == b"x-convlab-session":
                key = value.decode("latin-1")
        if not key:
            return {}
        world = self.worlds.pop(str(key), None)
        world = {} if world is None else world
        self.worlds[str(key)] = world
        while len(self.worlds) > _MAX_WORLDS:
            self.worlds.popitem(last=False)
        return world


def _completion(obs: Observation, model: str, messages: list[Message], n: int) -> dict[str, Any]:
    content = obs.text
    if content is None and obs.data is not None:
        content = dumps(obs.data).decode()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if obs.tool_calls:
        message["tool_calls"] = [_tool_call(c, i, n) for i, c in enumerate(obs.tool_calls)]
    prompt = sum(len(m.text().split()) for m in messages)
    answer = len((content or "").split()) + len(obs.tool_calls)
    usage = (
        obs.usage.to_dict()
        if obs.usage is not None
        else {
            "prompt_tokens": prompt,
            "completion_tokens": answer,
            "total_tokens": prompt + answer,
        }
    )
    return {
        "id": f"chatcmpl-convlab-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if obs.tool_calls else "stop",
            }
        ],
        "usage": usage,
    }


def _tool_call(call: Any, i: int, n: int) -> dict[str, Any]:
    args = call.arguments
    out: dict[str, Any] = {
        "id": call.id or f"call_{n}_{i}",
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": args if isinstance(args, str) else dumps(args).decode(),
        },
    }
    if call.result is not None:
        out["result"] = call.result
    return out


def _sse(completion: dict[str, Any]) -> bytes:
    """A minimal stream: one delta with everything, one finish chunk, `[DONE]`."""
    choice = completion["choices"][0]
    delta = {k: v for k, v in choice["message"].items() if v is not None}
    if "tool_calls" in delta:
        delta["tool_calls"] = [dict(tc, index=i) for i, tc in enumerate(delta["tool_calls"])]
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    first = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])
    last = dict(
        base,
        choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
        usage=completion["usage"],
    )
    return b"data: " + dumps(first) + b"\n\ndata: " + dumps(last) + b"\n\ndata: [DONE]\n\n"


def _error(message: str, kind: str) -> bytes:
    return dumps({"error": {"message": message, "type": kind, "code": kind}})


async def _respond(send: Send, status: int, body: bytes, ctype: str, close: bool = False) -> None:
    headers = [(b"content-type", ctype.encode()), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise MissingDependencyError("serve-demo", "serve") from None
    return uvicorn


class DemoServer:
    """The app on a uvicorn server in a background thread: `with DemoServer(...) as url:`."""

    def __init__(
        self,
        agents: Mapping[str, Any] | None = None,
        latency_ms: float = 0.0,
        port: int = 0,
        host: str = HOST,
        max_body_bytes: int = MAX_BODY_BYTES,
        body_timeout_s: float = BODY_TIMEOUT_S,
    ) -> None:
        uvicorn = _uvicorn()
        self.app = DemoApp(agents, latency_ms, max_body_bytes, body_timeout_s)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(1024)
        self.host, self.port = host, self.sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, access_log=False, log_level="warning", lifespan="on", timeout_keep_alive=60
        )
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL for OpenAI clients (`.../v1`)."""
        return f"http://{self.host}:{self.port}/v1"

    def run(self) -> None:
        """Serve in this thread until interrupted."""
        self.server.run(sockets=[self.sock])

    def start(self, wait_s: float = 10.0) -> DemoServer:
        """Serve in a daemon thread; return once the server accepts requests."""
        self._thread = threading.Thread(target=self.run, name="convlab-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + wait_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the demo server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask the server to finish and wait for its thread."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> str:
        return self.start().url

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(
    port: int = 8765,
    latency_ms: float = 0.0,
    host: str = HOST,
    agents: Mapping[str, Any] | None = None,
) -> None:
    """Serve the demo agents (or `agents`, by name) until interrupted. Blocks."""
    server = DemoServer(agents, latency_ms, port, host)
    names = ", ".join(server.app.models()) or "(none found)"
    sys.stderr.write(f"convlab serve-demo on {server.url} - models: {names}\n")
    server.run()


def main(argv: list[str] | None = None) -> int:
    """`convlab serve-demo [--port N] [--latency-ms MS] [--agent NAME=SPEC ...]`."""
    parser = argparse.ArgumentParser(
        prog="convlab serve-demo",
        description="Serve convlab's demo agents as an OpenAI-compatible endpoint on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=8765, help="TCP port (default 8765)")
    parser.add_argument(
        "--latency-ms", type=float, default=0.0, help="delay added to every completion"
    )
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="serve this agent spec (module:function, openai:MODEL, ...) as model NAME "
        "instead of the demo agents; repeatable",
    )
    args = parser.parse_args(argv)
    agents: dict[str, Any] | None = None
    if args.agent:
        agents = {}
        for item in args.agent:
            name, sep, spec = item.partition("=")
            if not sep or not name or not spec:
                parser.error(f"--agent takes NAME=SPEC, got {item!r}")
            agents[name] = as_agent(spec)
    try:
        serve(port=args.port, latency_ms=args.latency_ms, agents=agents)
    except MissingDependencyError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"error: cannot listen on {HOST}:{args.port}: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
