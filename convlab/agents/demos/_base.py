"""What every demo agent shares: a session that reads the conversation, calls its tools on
the case's world state and reports one Observation per user turn.

Demo agents are deterministic: the same conversation and world give the same observation,
tool-call ids included, so a demo run is a stable baseline and a failing example fails for
the reason its README gives, never by chance.
"""

from __future__ import annotations

import copy
import json
import re
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any

from convlab.agents.protocol import Agent, AgentContext, AgentSession
from convlab.model.conversation import Message, ToolCall
from convlab.model.records import Observation

__all__ = [
    "Answer",
    "Chat",
    "DemoAgent",
    "DemoSession",
    "Turn",
    "affirms",
    "asks_confirmation",
    "chat_of",
    "declines",
    "format_number",
]

Chat = list[tuple[str, str]]
"""The visible conversation: (role, text) for user messages and assistant messages with text."""

_AFFIRM = re.compile(
    r"^\W*(yes|yep|yeah|yup|y|sure|ok|okay|confirm(ed)?|correct|right|please do|go ahead|"
    r"do it|sounds good|that'?s (right|correct)|absolutely|of course)\b",
    re.IGNORECASE,
)
_DECLINE = re.compile(
    r"^\W*(no|nope|nah|cancel|don'?t|do not|stop|wait|never ?mind)\b", re.IGNORECASE
)
_CONFIRM_REQUEST = re.compile(
    r"\bconfirm\b|\bare you sure\b|\bshall i\b|\bshould i\b|\bis that (right|correct)\b",
    re.IGNORECASE,
)


def affirms(text: str) -> bool:
    """The user says yes (a confirmation)."""
    return bool(_AFFIRM.search(text)) and not declines(text)


def declines(text: str) -> bool:
    """The user says no (or cancels)."""
    return bool(_DECLINE.search(text))


def asks_confirmation(text: str) -> bool:
    """The assistant asked the user to confirm something."""
    return bool(_CONFIRM_REQUEST.search(text))


def chat_of(messages: list[Message] | list[dict[str, Any]]) -> Chat:
    """User and assistant texts in order; tool messages and tool-call-only turns are left out."""
    out: Chat = []
    for m in messages:
        msg = m if isinstance(m, Message) else Message.model_validate(m)
        text = msg.text().strip()
        if msg.role in ("user", "assistant") and text:
            out.append((msg.role, text))
    return out


def format_number(value: float) -> str:
    """206588.0 -> '206588'; 0.141364 -> '0.14136' (five decimals at most, as ConvFinQA)."""
    rounded = round(value, 5)
    if rounded == int(rounded):
        return str(int(rounded))
    return f"{rounded:.5f}".rstrip("0").rstrip(".")


@dataclass
class Answer:
    """What a demo agent says in one turn (tool calls are recorded on the Turn)."""

    text: str
    data: Any = None
    interaction: dict[str, Any] | None = None
    facts: list[dict[str, Any]] = field(default_factory=list)
    status: str = "completed"


class Turn:
    """One user turn being answered: the world it may change and the tools it called."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        self.world = ctx.world
        self.calls: list[ToolCall] = []

    def tool(self, name: str, result: Any, **arguments: Any) -> Any:
        """Record a tool call (made by the agent's own code) and return its result."""
        call_id = f"call_{self.ctx.turn + 1}_{len(self.calls) + 1}"
        self.calls.append(ToolCall(name, dict(arguments), result=copy.deepcopy(result), id=call_id))
        return result

    def observation(self, answer: Answer) -> Observation:
        """The turn as convlab sees it; `effects` is a copy of the world as the turn left it."""
        return Observation(
            text=answer.text,
            data=answer.data,
            tool_calls=list(self.calls),
            messages=self._messages(answer.text),
            status=answer.status,
            interaction=answer.interaction,
            facts=list(answer.facts),
            effects=copy.deepcopy(self.world),
        )

    def _messages(self, text: str) -> list[Message]:
        """OpenAI-style messages: the tool-calling assistant turn, tool results, the reply."""
        if not self.calls:
            return [Message(role="assistant", content=text)]
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in self.calls
        ]
        results = [
            Message(role="tool", tool_call_id=c.id, name=c.name, content=json.dumps(c.result))
            for c in self.calls
        ]
        return [
            Message(role="assistant", content=None, tool_calls=calls),
            *results,
            Message(role="assistant", content=text),
        ]


class DemoSession(AgentSession):
    """One conversation with a demo agent; subclasses answer from the visible chat."""

    async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
        """Answer the last user message in the light of the whole conversation."""
        turn = Turn(ctx)
        self.prepare(ctx.world)
        chat = chat_of(messages)
        if not chat or chat[-1][0] != "user":
            chat.append(("user", ""))
        return turn.observation(self.answer(chat, turn))

    def prepare(self, world: dict[str, Any]) -> None:
        """Fill in the parts of the world this agent needs and the case did not give."""

    @abstractmethod
    def answer(self, chat: Chat, turn: Turn) -> Answer:
        """Answer `chat[-1]` (a user message); call tools through `turn.tool`."""


class DemoAgent(Agent):
    """A built-in, rule-based agent with tools and a world state (no model, no network)."""

    close_after_run = True

    session_class: type[DemoSession]

    async def open(self, ctx: AgentContext) -> AgentSession:
        """A fresh session: demo agents keep per-conversation state only in the session."""
        return self.session_class()

    def describe(self) -> str:
        """The spec string that builds this agent again."""
        return f"demo:{self.name}"
