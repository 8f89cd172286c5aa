"""The answer to one quick message (`convlab.ask`): what was sent, what came back, the checks."""

from __future__ import annotations

from typing import Any

import msgspec

from convlab.model._record import Record
from convlab.model.conversation import Message, ToolCall
from convlab.model.records import AssertionResult, Observation

__all__ = ["Answer"]


class Answer(Record, kw_only=True):
    """An agent's answer to one message, with each assertion's result.

    In a notebook it renders as a chat transcript: the history, the user message, the agent's
    reply with its tool calls (arguments and results), and a pass/fail mark per assertion.
    """

    agent: str = ""
    """The agent's description (never a secret)."""
    messages: list[Message] = []
    """What the agent was sent: the history, then the user message."""
    observation: Observation = msgspec.field(default_factory=Observation)
    results: list[AssertionResult] = []
    duration_ms: float = 0.0

    @property
    def text(self) -> str:
        """The reply text."""
        return self.observation.text or ""

    @property
    def data(self) -> Any:
        """Structured output found in or returned with the reply."""
        return self.observation.data

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tools the agent called, with their arguments and results."""
        return self.observation.tool_calls

    @property
    def passed(self) -> bool:
        """Whether every assertion passed (True when there were none)."""
        return all(r.passed for r in self.results)

    def __repr__(self) -> str:
        from convlab.notebook.transcript import answer_text

        return answer_text(self)

    __str__ = __repr__

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from convlab.notebook.transcript import answer_bundle

        return answer_bundle(self)

    def _repr_html_(self) -> str:
        from convlab.notebook.transcript import answer_bundle

        return str(answer_bundle(self)["text/html"])
