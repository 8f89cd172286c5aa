"""Any OpenAI-compatible chat-completions endpoint as an agent, tool calls included.

`OpenAIAgent` posts through the shared fast transport (`convlab.agents._transport`), so a run
with many cases in flight stays close to the wire speed (see `benchmarks/bench_http.py`).
When the model asks for tools that have a local function, the session runs them (a tool may
take `ctx` to read or change `ctx.world`), appends the tool messages and asks again, at most
`ctx.max_agent_passes` model calls per user turn. Calls to tools with no local function are
returned in the Observation, not run.

Configuration comes from the arguments or from `OPENAI_API_KEY`, `OPENAI_BASE_URL` and
`OPENAI_MODEL`. The key is kept in a `Secret`: it is never in a repr, a description, a result
or an error message.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from convlab._durations import elapsed_ms
from convlab.agents._http_base import HTTPBackedAgent
from convlab.agents._transport import (
    HTTPClient,
    Secret,
    dumps,
    loads,
    queued_s,
    safe_url,
    url_secrets,
)
from convlab.agents.cache import replaying
from convlab.agents.protocol import AgentContext, AgentSession
from convlab.agents.tools import Tool, ToolFailed, as_tools
from convlab.errors import AgentError, AgentResponseError
from convlab.model.conversation import Message, ToolCall, Usage, message_dict
from convlab.model.records import Observation

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MAX_PASSES", "OpenAIAgent", "message_text"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_PASSES = 10
"""Model calls per user turn when the case sets no `max_agent_passes`."""

_ECHO_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
"""Keys of a returned assistant message that are sent back on the next call."""


def message_text(content: Any) -> str | None:
    """The text of an OpenAI message `content`: a string, or the text parts of a list."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return str(content)


class OpenAIAgent(HTTPBackedAgent):
    """A chat-completions model; `params` (temperature, max_tokens, ...) go into each request.

    `adaptive=False` turns off the AIMD in-flight limit that 429/503 answers cut.
    """

    close_after_run = True

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        system: str | None = None,
        tools: Iterable[Any] | None = None,
        *,
        timeout: float = 60.0,
        headers: Mapping[str, str] | None = None,
        adaptive: bool = True,
        **params: Any,
    ) -> None:
        resolved = model or os.environ.get("OPENAI_MODEL")
        if not resolved:
            raise ValueError("no model given: pass model=... or set OPENAI_MODEL")
        self.model = resolved
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        from_env = "OPENAI_API_KEY" if api_key is None else None  # not sent to workers
        self._key = Secret(key, *url_secrets(self.base_url), env=from_env)
        self.system = system
        self.tools: dict[str, Tool] = as_tools(tools)
        self.params = params
        self.timeout = timeout
        self.name = f"openai:{self.model}"
        self.url = _endpoint(self.base_url)
        self.shown_url = safe_url(self.url)
        self.shown_base_url = safe_url(self.base_url)
        """The endpoint as descriptions and errors show it: no password, no query values."""
        self._http = HTTPClient(
            timeout=timeout, secret=self._key, headers=headers, adaptive=adaptive
        )
        self._tool_defs = [t.definition() for t in self.tools.values()]

    def describe(self) -> str:
        """`openai:MODEL`, plus the endpoint when it is not OpenAI's own; never the key,
        nor a password or query value in `base_url`."""
        if self.base_url == DEFAULT_BASE_URL:
            return self.name
        return f"{self.name} @ {safe_url(self.base_url)}"

    def settings(self) -> dict[str, Any]:
        """The spec, model, endpoint, full system prompt, request params and tool names."""
        return self.masked_settings(
            {
                "spec": self.name,
                "model": self.model,
                "base_url": safe_url(self.base_url),
                "system": self.system,
                "params": dict(self.params),
                "tools": list(self.tools),
            }
        )

    def missing_key(self) -> str | None:
        """Why this agent cannot call its endpoint (no key for a remote one), or None.

        A local endpoint (127.0.0.1, localhost) and a URL with credentials need no key.
        """
        if self._key:
            return None
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.hostname in ("127.0.0.1", "localhost", "::1") or "@" in parts.netloc:
            return None
        return (
            f"no API key for {self.name} at {safe_url(self.base_url)}: set OPENAI_API_KEY "
            "(or pass api_key=...), or point OPENAI_BASE_URL at a local server"
        )

    async def open(self, ctx: AgentContext) -> AgentSession:
        """Chat completions are stateless: a session only carries the conversation it is sent.

        Raises:
            AgentError: At once, without connecting, if no key is set (`missing_key()`),
                unless the run replays recordings (`cache="replay"`).
        """
        problem = self.missing_key()
        if problem and not replaying():  # a replay sends nothing: CI needs no key
            raise AgentError(problem)
        return _OpenAISession(self)

    def system_prompt(self, ctx: AgentContext) -> str | None:
        """The agent's `system` prompt followed by the case's instructions."""
        parts = [p for p in (self.system, ctx.instructions) if p]
        return "\n\n".join(parts) or None

    async def complete(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """One model call: the parsed reply body, checked to hold a first choice's message.

        Raises:
            AgentHTTPError, AgentTimeoutError, AgentError: Transport and status failures.
            AgentResponseError: If the body is not JSON or has no choices.
        """
        payload: dict[str, Any] = {"model": self.model, "messages": messages, **self.params}
        if self._tool_defs:
            payload.setdefault("tools", self._tool_defs)
        response = await self._http.post(self.url, dumps(payload))
        return self._parse(response.body)

    def _parse(self, body: bytes) -> dict[str, Any]:
        try:
            data = loads(body)
        except ValueError:
            raise self._bad(f"malformed JSON from {self.shown_url}", body) from None
        if not isinstance(data, dict):
            raise self._bad(f"expected a JSON object from {self.shown_url}", body)
        choices = data.get("choices")
        if not choices or not isinstance(choices, list):
            raise self._bad(f"no choices in the reply from {self.shown_url}", body)
        first = choices[0]
        if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
            raise self._bad(f"choices[0] has no message in the reply from {self.shown_url}", body)
        return data

    def _bad(self, what: str, body: bytes) -> AgentResponseError:
        text = self._key.redact(body[:2000].decode("utf-8", "replace"))[:200]
        return AgentResponseError(f"{what}: {text!r}")


class _OpenAISession(AgentSession):
    def __init__(self, agent: OpenAIAgent) -> None:
        self.agent = agent

    async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
        """Call the model, run its tool calls, call again, until it answers or passes run out."""
        agent = self.agent
        start, queued = time.perf_counter(), queued_s()
        convo = _answer_dangling([message_dict(m) for m in messages])
        system = agent.system_prompt(ctx)
        if system:
            convo.insert(0, {"role": "system", "content": system})
        passes = ctx.max_agent_passes or DEFAULT_MAX_PASSES
        new: list[Message] = []
        calls: list[ToolCall] = []
        tokens: list[int] | None = None
        model = agent.model
        text: str | None = None
        status = "completed"
        for n in range(passes):
            data = await agent.complete(convo)
            tokens = _add_usage(tokens, data.get("usage"))
            if isinstance(data.get("model"), str) and data["model"]:
                model = data["model"]  # what answered, as the endpoint reports it
            message = data["choices"][0]["message"]
            message.setdefault("role", "assistant")
            new.append(Message.model_validate(message))
            convo.append({k: message[k] for k in _ECHO_KEYS if message.get(k) is not None})
            text = message_text(message.get("content"))
            requested = message.get("tool_calls") or []
            if not requested:
                break
            turn_calls, results, complete = await self._run_tools(requested, ctx)
            calls.extend(turn_calls)
            for result in results:
                new.append(Message.model_validate(result))
                convo.append(result)
            if not complete:
                break
            if n == passes - 1:
                status = "incomplete"
        usage = None
        if tokens is not None:
            prompt, completion, total = tokens
            usage = Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                total_tokens=total,
                model=model,
                endpoint=agent.shown_base_url,
            )
        return Observation(
            text=text,
            data=self._data(text),
            tool_calls=calls,
            messages=new,
            status=status,
            usage=usage,
            latency_ms=round(elapsed_ms(start) - (queued_s() - queued) * 1000, 3),
        )

    async def _run_tools(
        self, requested: list[Any], ctx: AgentContext
    ) -> tuple[list[ToolCall], list[dict[str, Any]], bool]:
        """Run the local tools; `complete` is False when some call has no local function."""
        calls: list[ToolCall] = []
        results: list[dict[str, Any]] = []
        complete = True
        for i, raw in enumerate(requested):
            name, arguments, run_with, call_id, parse_error = _read_call(raw, i)
            found = self.agent.tools.get(name)
            call = ToolCall(name, arguments, id=call_id)
            if isinstance(raw, dict) and "result" in raw:  # convlab serve-demo: already run
                call.result = raw["result"]
            calls.append(call)
            if found is None or found.fn is None:
                complete = False
                continue
            try:
                if parse_error:
                    raise ToolFailed(parse_error)
                call.result = await found.run(run_with, ctx)
                content = _tool_content(call.result)
            except ToolFailed as exc:
                call.error = str(exc)
                content = f"error: {exc}"
            results.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return calls, results, complete

    def _data(self, text: str | None) -> Any:
        """Structured output when JSON was requested (`response_format`)."""
        if not text or "response_format" not in self.agent.params:
            return None
        try:
            return loads(text)
        except ValueError:
            return None


def _endpoint(base_url: str) -> str:
    """`base_url` + `/chat/completions`, put in the path: a query (`?api-version=...`, as
    Azure wants) stays at the end."""
    parts = urllib.parse.urlsplit(base_url)
    path = parts.path.rstrip("/") + "/chat/completions"
    return urllib.parse.urlunsplit(parts._replace(path=path))


def _read_call(raw: Any, index: int) -> tuple[str, Any, Any, str, str | None]:
    """name, arguments as recorded, arguments to run the tool with, id, and a parse problem.

    The recorded arguments follow `convlab.agents._json.recorded_arguments`: a JSON object
    parsed (numbers exact), any other text as sent. The tool runs with the parsed value;
    `""` means no arguments.
    """
    fn = raw.get("function") if isinstance(raw, dict) else None
    fn = fn if isinstance(fn, dict) else {}
    name = str(fn.get("name") or "")
    call_id = str(raw.get("id") or f"call_{index}") if isinstance(raw, dict) else f"call_{index}"
    arguments = fn.get("arguments")
    if arguments is None:
        return name, {}, {}, call_id, None
    if not isinstance(arguments, str):
        return name, arguments, arguments, call_id, None
    if arguments == "":
        return name, "", {}, call_id, None
    try:
        parsed = loads(arguments)
    except ValueError:
        problem = f"arguments are not valid JSON: {arguments[:200]!r}"
        return name, arguments, arguments, call_id, problem
    recorded = parsed if isinstance(parsed, dict) else arguments  # as `recorded_arguments`
    return name, recorded, parsed, call_id, None


def _answer_dangling(convo: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every earlier tool call a tool message, as chat-completions APIs require.

    Calls returned unexecuted (no local function) leave the history without their results;
    a result recorded on the call (serve-demo sends one) fills the gap, else a note does.
    """
    out: list[dict[str, Any]] = []
    pending: dict[str, Any] = {}

    def flush() -> None:
        for call_id, result in pending.items():
            content = "(not run here)" if result is None else _tool_content(result)
            out.append({"role": "tool", "tool_call_id": call_id, "content": content})
        pending.clear()

    for message in convo:
        role = message.get("role")
        if role == "tool":
            pending.pop(str(message.get("tool_call_id")), None)
        else:
            flush()
        out.append(message)
        if role == "assistant":
            for i, call in enumerate(message.get("tool_calls") or []):
                if isinstance(call, dict):
                    pending[str(call.get("id") or f"call_{i}")] = call.get("result")
    flush()
    return out


def _tool_content(result: Any) -> str:
    if isinstance(result, str):
        return result
    return dumps(result).decode()


_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _add_usage(total: list[int] | None, raw: Any) -> list[int] | None:
    """Token counts summed over a turn's calls (None until a call reports usage)."""
    if not isinstance(raw, dict):
        return total
    total = total or [0, 0, 0]
    for i, key in enumerate(_USAGE_KEYS):
        value = raw.get(key)
        if isinstance(value, int):
            total[i] += value
    return total
