"""What goes to an agent and what comes back: messages, tool calls, replies, observations."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from convlab.model._record import Record, held_by_pydantic

__all__ = ["Message", "Reply", "ToolCall", "Usage", "message_dict"]


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
    """The message as an OpenAI-style dict, without keys whose value is None: what agents
    send on."""
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


class Usage(Record, kw_only=True):
    """Token counts reported by a model (a result record, convlab.model.records)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    model: str | None = None
    """The model that answered, as the endpoint reported it (what prices it)."""
    endpoint: str | None = None
    """The endpoint's base URL, fit to show (names the provider when the model alone does not)."""


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
    usage: held_by_pydantic(Usage) | None = None  # type: ignore[valid-type]
    events: list[dict[str, Any]] = Field(default_factory=list)
    """Events the agent recorded for this turn (intention-kernel's kernel events)."""
