"""Result records: what one agent turn, assertion, turn, checkpoint and case instance produced.

Records are data the engine makes itself, so they are msgspec `Struct`s: built once, with
every field, and never validated again. Each record's fields are declared here and nowhere
else: the store line, the `.json` and `.jsonl` saves and `to_dict()` are all the record's one
generic encoding (convlab.model.codec), which leaves out a field still at its default.
What users write (suites, cases, assertion specs, messages, tool calls) stays pydantic;
a record holding one of those (a turn's messages and input, an observation's tool calls)
encodes it with pydantic's own dump and validates it with pydantic's own validator.
"""

from __future__ import annotations

from typing import Any, Literal

from convlab.model._record import Record
from convlab.model.blame import BLAMED_STATUSES, Blame, case_blame
from convlab.model.conversation import Message, ToolCall, Usage
from convlab.model.suite import TurnInput

__all__ = [
    "AssertionResult",
    "AssertionStatus",
    "CaseResult",
    "CheckpointResult",
    "ErrorInfo",
    "Observation",
    "Record",
    "Spend",
    "Status",
    "TurnResult",
    "Usage",
    "variant_label",
]

Status = Literal["passed", "failed", "error", "skipped", "timeout", "cancelled", "blocked"]
"""A case instance's status (`CaseResult.status`)."""
AssertionStatus = Literal["passed", "failed", "error", "skipped"]
"""An assertion's or a turn's status."""


class ErrorInfo(Record, kw_only=True):
    """An exception as the person fixing it needs it: its type and message, the innermost
    frame of their own code it passed through (not convlab's, the standard library's or an
    installed package's), and a short traceback with convlab's and asyncio's frames removed.

    `file`, `line` and `function` are None when no frame was the user's (an HTTP agent's
    connection error, a bug in convlab itself); `traceback` is then empty.
    """

    type: str
    """The exception's class name (`AttributeError`)."""
    message: str = ""
    file: str | None = None
    """The file as Python names it (`co_filename`): a path, or a notebook cell's file."""
    line: int | None = None
    function: str | None = None
    traceback: str = ""

    @property
    def place(self) -> str:
        """`my_agent.py:12`: the file's name (not its folder) and the line; '' when unknown."""
        if self.file is None:
            return ""
        name = self.file.replace("\\", "/").rsplit("/", 1)[-1] or self.file
        return f"{name}:{self.line}" if self.line is not None else name

    @property
    def location(self) -> str:
        """`my_agent.py:12 in reply`; '' when no frame was the user's."""
        place = self.place
        return f"{place} in {self.function}" if place and self.function else place


class Observation(Record, kw_only=True):
    """Everything one agent turn produced; checks read it."""

    text: str | None = None
    data: Any = None
    """Structured output (a returned dict becomes `data`)."""
    tool_calls: list[ToolCall] = []
    messages: list[Message] = []
    """Messages the turn added to the conversation (assistant and tool messages)."""
    status: str = "completed"
    interaction: dict[str, Any] | None = None
    """An open interaction such as `{"kind": "choice", "options": [...]}`."""
    facts: list[dict[str, Any]] = []
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
    """The turn's idempotent id, `eval.<sha256 of {stepId, threadId}>`."""
    trace_id: str | None = None
    """A fresh id for this execution of the turn (the kernel's `traceId`)."""
    replayed: bool = False
    """True when the reply was not produced now but given back (a recorded reply)."""
    events: list[dict[str, Any]] = []
    """Events the agent recorded for this turn (the kernel's events of this thread and turn)."""

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
            # (its `send` returns `{ ...result, events }`)
            "threadId": self.thread_id,
            "turnId": self.turn_id,
            "traceId": self.trace_id,
            "replayed": self.replayed if self.turn_id is not None else None,
            "events": self.events if self.turn_id is not None else None,
        }
        return {k: v for k, v in out.items() if v is not None}


class AssertionResult(Record, kw_only=True):
    """The outcome of one assertion: pass/fail, what was expected, what was found, and where."""

    kind: str
    id: str | None = None
    label: str | None = None
    status: AssertionStatus = "passed"
    message: str = ""
    expected: Any = None
    actual: Any = None
    error: str | None = None
    """Why the evaluator could not decide (crash, bad config, no judge); never a pass."""
    error_info: ErrorInfo | None = None
    """The exception behind `error` when an evaluator, grader, test or judge raised."""
    blame: Blame | None = None
    """Whose fault an `error` is (`judge`, `suite`, `infrastructure`; convlab.model.blame)."""
    score: float | None = None
    duration_ms: float = 0.0
    children: list[AssertionResult] = []
    details: dict[str, Any] = {}

    @property
    def passed(self) -> bool:
        """True only for a pass (errors and skips are not passes)."""
        return self.status == "passed"

    def __repr__(self) -> str:
        head = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP"}[
            self.status
        ]
        name = self.label or self.id or self.kind
        lines = [f"{head} {name}" + (f": {self.message}" if self.message else "")]
        if self.status != "passed":
            lines += [f"  expected: {self.expected!r}", f"  actual:   {self.actual!r}"]
        if self.error:
            lines.append(f"  error: {self.error}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"


class TurnResult(Record, kw_only=True):
    """One user turn: what was sent, what the agent did, what the checks said."""

    index: int
    step_id: str | None = None
    variant: str | None = None
    input: TurnInput | None = None
    messages: list[Message] = []
    """The user messages sent in this turn (simulated users included)."""
    observation: Observation | None = None
    assertions: list[AssertionResult] = []
    status: AssertionStatus = "passed"
    duration_ms: float = 0.0
    error: str | None = None
    error_info: ErrorInfo | None = None
    """The exception behind `error` when the agent (or the simulator) raised."""
    code: str | None = None
    """The turn's error code (intention-kernel's turn `errorCode`), None unless it erred."""


class CheckpointResult(Record, kw_only=True):
    """Whether a dynamic case reached a checkpoint, and when."""

    id: str
    reached: bool = False
    reached_at_turn: int | None = None
    required: bool = True
    passed: bool = False
    message: str | None = None


class Spend(Record, kw_only=True):
    """What one role's calls to one model used in an instance, and what that cost."""

    role: Literal["agent", "simulator", "judge"]
    model: str | None = None
    endpoint: str | None = None
    calls: int = 0
    """Calls that reported usage (a turn of the agent, a simulated user turn, a judge's
    question)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None
    """In US dollars (genai-prices, or the run's `prices`); None when the model has no price."""


class CaseResult(Record, kw_only=True):
    """One executed case instance, keyed by (case id, variant ids, repetition, run index)."""

    case_id: str
    variant: dict[str, str] = {}
    """Chosen variant id per step id."""
    repetition: int = 0
    run: int = 0
    status: Status
    reward: float = 0.0
    turns: list[TurnResult] = []
    assertions: list[AssertionResult] = []
    """Case-scope assertions (standard checks, final checks, the Python test)."""
    checkpoints: list[CheckpointResult] = []
    error: str | None = None
    error_info: ErrorInfo | None = None
    """The exception behind `error`, when user code raised one (the agent, the simulator, a
    hook, an evaluator or the judge): its type, message, file and line, short traceback."""
    code: str | None = None
    """A stable code for why the instance did not pass or fail on its own checks:
    intention-kernel's codes (EVALUATION_TRANSPORT_FAILED, EVALUATOR_FAILED,
    EXTERNAL_WRITES_NOT_AUTHORIZED, ...; convlab.engine.codes lists them), for every
    format. None for a pass or a plain failure."""
    blame: Blame | None = None
    """Whose fault it is that the instance did not pass (None when it passed, was skipped,
    blocked or cancelled); see convlab.model.blame. Settled when the record is made: a
    check the reply failed makes it `agent`; when none is given it is inferred."""
    duration_ms: float = 0.0
    attempts: int = 1
    usage: Usage | None = None
    spend: list[Spend] = []
    """Tokens and cost of the model calls, by role (agent, simulator, judge) and model."""
    started_at: str | None = None
    finish_reason: str | None = None
    metadata: dict[str, Any] = {}

    def __post_init__(self) -> None:
        # only a non-pass verdict has a blame: the one given (what stopped the instance),
        # unless a check the reply failed makes it the agent's; none given (a record saved
        # before blame existed, or built by hand) is inferred from the record
        if self.status in BLAMED_STATUSES:
            self.blame = case_blame(self, self.blame)
        elif self.blame is not None:
            self.blame = None

    @property
    def key(self) -> tuple[str, str, int, int]:
        """The instance key: (case id, variant ids joined, repetition, run index)."""
        return (self.case_id, variant_label(self.variant), self.repetition, self.run)


def variant_label(variant: dict[str, str]) -> str:
    """Variant ids joined as `step=variant,...` (empty when none)."""
    if not variant:
        return ""
    return ",".join(f"{k}={v}" for k, v in variant.items())
