"""One scripted OpenAI-compatible model on 127.0.0.1, for HoloDeck and convlab side by side.

It serves `POST /v1/chat/completions` (what convlab's `openai` agent calls) and
`POST /v1/responses` (what HoloDeck 0.7.1 calls through the OpenAI Agents SDK). Both read the
same script, so the two tools see the same model: a reply is chosen from the request alone,
never from timing or call order, and the same conversation gets the same reply on either API.

The script maps a conversation key to its steps. The key is the user messages so far joined
by `"\\n---\\n"` (as HoloDeck joins a case's inputs), so a follow-up such as "what about in
2008?" can get different replies in different cases. Steps are `{"tools": [[name, args],
...]}` (one model call that asks for those tools) and a final `{"text": ...}`; `{"error":
status}` answers that HTTP status instead. Which step is due depends on how many tool
results follow the last user message, so a retried call gets the same step again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict[str, Any]
Script = Mapping[str, list[Step]]
JOIN = "\n---\n"


def _text(content: Any) -> str:
    """The text of a message content: a string or a list of text parts (either API)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _chat_state(body: dict[str, Any]) -> tuple[list[str], int]:
    """User texts and the tool results after the last user message, from a chat request."""
    users: list[str] = []
    results = 0
    for message in body.get("messages", []):
        if message.get("role") == "user":
            users.append(_text(message.get("content")))
            results = 0
        elif message.get("role") == "tool":
            results += 1
    return users, results


def _responses_state(body: dict[str, Any]) -> tuple[list[str], int]:
    """The same from a Responses request (`input` is a string or a list of items)."""
    items = body.get("input", [])
    if isinstance(items, str):
        return [items], 0
    users: list[str] = []
    results = 0
    for item in items:
        if item.get("role") == "user":
            users.append(_text(item.get("content")))
            results = 0
        elif item.get("type") == "function_call_output":
            results += 1
    return users, results


def due_step(script: Script, users: list[str], results: int) -> tuple[Step, int]:
    """The step for this conversation and the number of tool calls asked for before it."""
    key = JOIN.join(users)
    if key not in script:
        raise KeyError(f"the script has no reply for the conversation {key!r}")
    asked = 0
    for step in script[key]:
        tools = step.get("tools")
        if tools and results >= asked + len(tools):
            asked += len(tools)
            continue
        return step, asked
    raise KeyError(f"the script for {key!r} ends with a tool call; give it a final text")


def _chat_reply(model: str, step: Step, first_id: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.get("text")}
    finish = "stop"
    if step.get("tools"):
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": f"call_{first_id + i}",
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for i, (name, args) in enumerate(step["tools"])
        ]
        finish = "tool_calls"
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _responses_reply(model: str, step: Step, first_id: int) -> dict[str, Any]:
    output: list[dict[str, Any]]
    if step.get("tools"):
        output = [
            {
                "type": "function_call",
                "id": f"fc_{first_id + i}",
                "call_id": f"call_{first_id + i}",
                "name": name,
                "arguments": _arguments(args),
                "status": "completed",
            }
            for i, (name, args) in enumerate(step["tools"])
        ]
    else:
        output = [
            {
                "type": "message",
                "id": "msg_scripted",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": step["text"], "annotations": []}],
            }
        ]
    return {
        "id": "resp_scripted",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _arguments(args: Any) -> str:
    """Tool arguments as the API sends them: JSON text, or the text itself when scripted so."""
    return args if isinstance(args, str) else json.dumps(args)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test prints what it compares, not every request."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.rstrip("/")
        if path.endswith("/chat/completions"):
            users, results = _chat_state(body)
            make = _chat_reply
        elif path.endswith("/responses"):
            users, results = _responses_state(body)
            make = _responses_reply
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        api = "chat" if make is _chat_reply else "responses"
        try:
            step, asked = due_step(self.server.script, users, results)
        except KeyError as exc:
            self.server.unscripted.append(str(exc))
            self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
            return
        with self.server.lock:
            self.server.calls[api] = self.server.calls.get(api, 0) + 1
        if "error" in step:
            self._send(int(step["error"]), {"error": {"message": "scripted failure"}})
            return
        self._send(200, make(str(body.get("model", "scripted")), step, asked))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.calls: dict[str, int] = {}
        """Model calls served per API ("chat", "responses")."""
        self.unscripted: list[str] = []
        """Conversations the script had no reply for (a test asserts there are none)."""
        self.lock = threading.Lock()


@contextmanager
def serve(script: Script) -> Iterator[_Server]:
    """Serve `script` on a free port of 127.0.0.1; `server.server_address[1]` is the port."""
    server = _Server(script)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
