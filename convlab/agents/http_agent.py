"""A generic JSON endpoint as an agent: a request template in, dotted paths out.

`request` is a template whose string leaves may hold `{messages}`, `{text}` (the last user
message's text), `{case_id}`, `{instance}`, `{turn}` and `{world}`; a leaf that is exactly one
placeholder takes the value itself (a list, a dict, a number), otherwise the placeholder is
written into the string. `response` maps `text`, `data` and `tool_calls` to dotted paths in
the reply (`choices.0.message.content`); by default the text is read from `text`, `content`
or `choices.0.message.content`, whichever is there. A missing path is an AgentResponseError
that names it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import httpx

from convlab._durations import elapsed_ms
from convlab.agents._http_base import HTTPBackedAgent
from convlab.agents._json import recorded_arguments
from convlab.agents._transport import (
    HTTPClient,
    Secret,
    dumps,
    loads,
    queued_s,
    safe_url,
    url_secrets,
)
from convlab.agents.function import observation
from convlab.agents.protocol import AgentContext, AgentSession
from convlab.errors import AgentResponseError
from convlab.model.conversation import Message, Reply, ToolCall, message_dict
from convlab.model.records import Observation

__all__ = ["DEFAULT_REQUEST", "DEFAULT_TEXT_PATHS", "HTTPAgent", "get_path", "render"]

DEFAULT_REQUEST: dict[str, Any] = {"messages": "{messages}"}
DEFAULT_TEXT_PATHS = ("text", "content", "choices.0.message.content")

_PLACEHOLDER = re.compile(r"\{(messages|text|case_id|instance|turn|world)\}")
_MISSING = object()


def render(template: Any, values: Mapping[str, Any]) -> Any:
    """Fill a request template's placeholders (see the module docstring)."""
    if isinstance(template, dict):
        return {k: render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, values) for v in template]
    if not isinstance(template, str):
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole:
        return values[whole.group(1)]

    def text_of(m: re.Match[str]) -> str:
        value = values[m.group(1)]
        return value if isinstance(value, str) else dumps(value).decode()

    return _PLACEHOLDER.sub(text_of, template)


def get_path(data: Any, path: str) -> Any:
    """The value at a dotted path (`a.0.b`, also `$.a[0].b`); a sentinel when it is absent."""
    path = re.sub(r"\[(-?\d+)\]", r".\1", path.strip())
    path = path.removeprefix("$").lstrip(".")
    node = data
    for part in path.split(".") if path else []:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            if not -len(node) <= index < len(node):
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


class HTTPAgent(HTTPBackedAgent):
    """POSTs a JSON request built from a template to `url` and reads the reply by paths.

    `adaptive=False` turns off the AIMD in-flight limit that 429/503 answers cut.
    """

    close_after_run = True

    def __init__(
        self,
        url: str,
        request: Any = None,
        response: Mapping[str, str] | str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        adaptive: bool = True,
    ) -> None:
        try:
            self.url = httpx.URL(url)
        except httpx.InvalidURL:
            raise ValueError(f"not a valid URL: {safe_url(url)!r}") from None
        if self.url.scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {safe_url(url)!r}")
        self.request = DEFAULT_REQUEST if request is None else request
        self.paths = _paths(response)
        self.timeout = timeout
        self.name = safe_url(url)  # a bare URL is itself a valid agent spec; no credentials
        self._secret = Secret(None, *url_secrets(url))  # the client adds the headers' values
        self._http = HTTPClient(
            timeout=timeout, secret=self._secret, headers=headers, adaptive=adaptive
        )

    def settings(self) -> dict[str, Any]:
        """The URL (fit to show), the request template and the response paths."""
        return self.masked_settings(
            {"spec": self.name, "url": self.name, "request": self.request, "response": self.paths}
        )

    async def open(self, ctx: AgentContext) -> AgentSession:
        """Stateless: every turn sends the whole conversation as the template says."""
        return _HTTPSession(self)

    def build(self, messages: list[Message], ctx: AgentContext) -> Any:
        """The request body for this turn."""
        payload = [message_dict(m) for m in messages]
        last_user = next((m.text() for m in reversed(messages) if m.role == "user"), "")
        values = {
            "messages": payload,
            "text": last_user,
            "case_id": ctx.case.id if ctx.case is not None else "",
            "instance": ctx.instance,
            "turn": ctx.turn,
            "world": ctx.world,
        }
        return render(self.request, values)

    def read(self, body: bytes, content_type: str) -> Reply:
        """Map the reply body to a Reply through the configured paths."""
        text, data, calls = self._parts(body, content_type)
        return Reply(text=text, data=data, tool_calls=calls)

    def _parts(self, body: bytes, content_type: str) -> tuple[str | None, Any, list[ToolCall]]:
        """The reply's text, data and tool calls, read through the configured paths."""
        try:
            data = loads(body)
        except ValueError:
            if content_type.startswith("text/plain") and "text" not in self.paths:
                return body.decode("utf-8", "replace"), None, []
            raise self._bad("malformed JSON", body) from None
        if isinstance(data, str) and not self.paths:
            return data, None, []
        text = self._text(data, body)
        value = self._pick(data, body, "data")
        calls = self._pick(data, body, "tool_calls")
        return (
            text,
            None if value is _MISSING else value,
            [] if calls is _MISSING else _tool_calls(calls, body, self),
        )

    def _text(self, data: Any, body: bytes) -> str | None:
        """The mapped text; else the first default path present (required when nothing is
        mapped, optional when only `data` or `tool_calls` are)."""
        if "text" in self.paths:
            value = self._pick(data, body, "text")
        else:
            found = (get_path(data, p) for p in DEFAULT_TEXT_PATHS)
            value = next((v for v in found if v is not _MISSING), _MISSING)
            if value is _MISSING and not self.paths:
                names = ", ".join(DEFAULT_TEXT_PATHS)
                raise self._bad(f"no text at any of {names} (set response={{'text': PATH}})", body)
        if value is _MISSING or value is None:
            return None
        if isinstance(value, str):
            return value
        return dumps(value).decode()

    def _pick(self, data: Any, body: bytes, key: str) -> Any:
        path = self.paths.get(key)
        if path is None:
            return _MISSING
        value = get_path(data, path)
        if value is _MISSING:
            raise self._bad(f"no {key} at path {path!r}", body)
        return value

    def _bad(self, what: str, body: bytes) -> AgentResponseError:
        text = self._secret.redact(body[:2000].decode("utf-8", "replace"))[:200]
        return AgentResponseError(f"reply from {self.name}: {what}: {text!r}")


def _paths(response: Mapping[str, str] | str | None) -> dict[str, str]:
    if response is None:
        return {}
    if isinstance(response, str):
        return {"text": response}
    unknown = set(response) - {"text", "data", "tool_calls"}
    if unknown:
        raise ValueError(f"response maps text, data and tool_calls; unknown: {sorted(unknown)}")
    return dict(response)


def _tool_calls(value: Any, body: bytes, agent: HTTPAgent) -> list[ToolCall]:
    """Tool calls as `{name, arguments, result}` or OpenAI `{function: {name, arguments}}`."""
    if not isinstance(value, list):
        raise agent._bad(f"tool_calls at {agent.paths['tool_calls']!r} is not a list", body)
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise agent._bad("a tool call is not an object", body)
        inner = item.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else item
        args = fn.get("arguments", {})
        if isinstance(args, str):
            args = recorded_arguments(args)
        out.append(ToolCall(str(fn.get("name", "")), args, item.get("result"), id=item.get("id")))
    return out


class _HTTPSession(AgentSession):
    def __init__(self, agent: HTTPAgent) -> None:
        self.agent = agent

    async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
        """One POST per turn; its latency leaves out the wait for an adaptive slot."""
        agent = self.agent
        start, queued = time.perf_counter(), queued_s()
        body = dumps(agent.build(messages, ctx))
        response = await agent._http.post(str(agent.url), body)
        # parsed straight into the Observation: no Reply model in between
        obs = observation(*agent._parts(response.body, response.headers.get("content-type", "")))
        obs.latency_ms = round(elapsed_ms(start) - (queued_s() - queued) * 1000, 3)
        return obs
