"""The answer to one quick message (`convlab.ask`): what was sent, what came back, the checks."""

from __future__ import annotations

from typing import Any

import msgspec

from convlab.model._record import Record
from convlab.model.conversation import Message, ToolCall
from convlab.model.records import AssertionResult, ErrorInfo, Observation

__all__ = ["Answer"]


class Answer(Record, kw_only=True):
    """An agent's answer to one message, with each assertion's result.

    In a notebook it renders as a chat transcript: the history, the user message, the agent's
    reply with its tool calls (arguments and results), and a pass/fail mark per assertion.
    When the agent raised, it has no reply: `status` is `error`, `error` says what was raised
    and `error_info` where, and it renders as an error card with the short traceback.
    """

    agent: str = ""
    """The agent's description (never a secret)."""
    messages: list[Message] = []
    """What the agent was sent: the history, then the user message."""
    observation: Observation = msgspec.field(default_factory=Observation)
    results: list[AssertionResult] = []
    duration_ms: float = 0.0
    error: str | None = None
    """`Type: message` of what the agent raised (None when it answered); no check ran."""
    error_info: ErrorInfo | None = None
    """What the agent raised: its type, message, file and line in the user's code, and the
    short traceback."""

    @property
    def status(self) -> str:
        """`passed` (every assertion passed), `failed`, or `error` (the agent raised)."""
        if self.error is not None:
            return "error"
        return "passed" if self.passed else "failed"

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
        """Whether the agent answered and every assertion passed (True when there were none)."""
        return self.error is None and all(r.passed for r in self.results)

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
