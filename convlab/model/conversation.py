"""What goes to an agent and what comes back: messages, tool calls, replies, observations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

__all__ = ["REPLY_ONCE", "Message", "Observation", "Reply", "ToolCall", "Usage", "message_dict"]

REPLY_ONCE = {"reply_once": True}
"""Serialisation context for stores and saved runs: an observation whose text is also one of
its messages' content writes `"text_in": <message index>` instead of the text a second time
(reading it back restores the text)."""

_ONCE_MIN = 256
"""Shorter texts are written twice: a reference would save next to nothing."""


class Message(BaseModel):
    """One OpenAI-style chat message; unknown keys (e.g. `refusal`) are kept as they are."""

    model_config = ConfigDict(extra="allow")

    role: str = "user"
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The message's text: a string content, or the `text` of its text parts joined."""
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")


def message_dict(message: Message) -> dict[str, Any]:
    """`message.model_dump(exclude_none=True)`: what agents send on. A plain text message
    (no parts, no tool calls, no extra keys: the usual one) is read straight off its fields,
    2.5x faster; others go through pydantic."""
    content = message.content
    if (
        message.tool_calls is None
        and not message.__pydantic_extra__
        and (content is None or type(content) is str)
    ):
        return {k: v for k, v in message.__dict__.items() if v is not None}
    out: dict[str, Any] = message.model_dump(exclude_none=True)
    return out


class ToolCall(BaseModel):
    """A tool the agent called: `ToolCall("lookup", {"q": 1})` or `ToolCall(name=..., ...)`."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: Any = Field(default_factory=dict)
    """Arguments as the agent gave them: usually a dict, sometimes a JSON string."""
    result: Any = None
    error: str | None = None
    id: str | None = None

    def __init__(
        self, name: str | None = None, arguments: Any = None, result: Any = None, **kw: Any
    ) -> None:
        if name is not None:
            kw["name"] = name
        if arguments is not None:
            kw["arguments"] = arguments
        if result is not None:
            kw["result"] = result
        super().__init__(**kw)


class Usage(BaseModel):
    """Token counts reported by a model."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class Reply(BaseModel):
    """What an agent function may return instead of a plain string."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    data: Any = None
    """Structured output (a returned dict becomes `data`)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    interaction: dict[str, Any] | None = None
    """An open interaction such as `{"kind": "choice", "options": [...]}`."""
    facts: list[dict[str, Any]] = Field(default_factory=list)
    status: str = "completed"
    usage: Usage | None = None
    events: list[dict[str, Any]] = Field(default_factory=list)
    """Events the agent recorded for this turn (intention-kernel's kernel events)."""


class Observation(BaseModel):
    """Everything one agent turn produced; checks read it."""

    text: str | None = None
    data: Any = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    """Messages the turn added to the conversation (assistant and tool messages)."""
    status: str = "completed"
    interaction: dict[str, Any] | None = None
    facts: list[dict[str, Any]] = Field(default_factory=list)
    effects: dict[str, Any] | None = None
    """The world state as the agent left it."""
    usage: Usage | None = None
    latency_ms: float | None = None
    error: str | None = None
    outcome: Literal["ok", "error", "timeout"] = "ok"
    truncated_from: int | None = None
    """The reply's size in UTF-8 bytes when it was longer than the run's `max_reply_bytes`:
    its text (and its messages' text) was cut to that many bytes. None: nothing was cut."""
    thread_id: str | None = None
    """The conversation's id, `<run id>:<case id>` as intention-kernel's runner makes it."""
    turn_id: str | None = None
    """The turn's idempotent id, `eval.<sha256 of {stepId, threadId}>` (runner.ts)."""
    trace_id: str | None = None
    """A fresh id for this execution of the turn (the kernel's `traceId`)."""
    replayed: bool = False
    """True when the reply was not produced now but given back (a recorded reply)."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """Events the agent recorded for this turn (the kernel's events of this thread and turn)."""

    @model_serializer(mode="wrap", when_used="json")  # only JSON saves ask for it
    def _text_once(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        text = self.text
        context = info.context
        if (
            text is None
            or len(text) < _ONCE_MIN
            or not (isinstance(context, dict) and context.get("reply_once"))
            or data.get("text") != text
        ):
            return data
        for index, message in enumerate(self.messages):
            if message.content is text or message.content == text:
                del data["text"]
                data["text_in"] = index
                break
        return data

    @model_validator(mode="before")
    @classmethod
    def _text_back(cls, data: Any) -> Any:
        if isinstance(data, dict) and "text_in" in data:
            data = dict(data)
            index = data.pop("text_in")
            message = data.get("messages", [])[index]
            content = message.content if isinstance(message, Message) else message["content"]
            data["text"] = content
        return data

    def view(self) -> dict[str, Any]:
        """The dict that path-based checks read; a key whose value is None is absent."""
        response = {
            "text": self.text,
            "data": self.data,
            "status": self.status,
            "interaction": self.interaction,
            "tool_calls": [c.model_dump(exclude_none=True) for c in self.tool_calls] or None,
        }
        checkpoint = {"facts": self.facts, "interaction": self.interaction}
        out = {
            "response": {k: v for k, v in response.items() if v is not None},
            "checkpoint": {k: v for k, v in checkpoint.items() if v is not None},
            "effects": self.effects,
            # what intention-kernel's direct adapter adds to the committed turn result
            # (agentAdapter.ts `send`: `{ ...result, events }`)
            "threadId": self.thread_id,
            "turnId": self.turn_id,
            "traceId": self.trace_id,
            "replayed": self.replayed if self.turn_id is not None else None,
            "events": self.events if self.turn_id is not None else None,
        }
        return {k: v for k, v in out.items() if v is not None}
