"""The model: suites and cases, conversations, assertion specs and result records."""

from convlab.model.answer import Answer
from convlab.model.assertions import Assertion, parse_assertion
from convlab.model.conversation import Message, Observation, Reply, ToolCall, Usage
from convlab.model.results import (
    AssertionResult,
    CaseResult,
    CheckpointResult,
    Run,
    Summary,
    TurnResult,
)
from convlab.model.suite import (
    Case,
    Checkpoint,
    Defaults,
    FileRef,
    Hooks,
    Limits,
    Selection,
    SimulatorSpec,
    Source,
    Suite,
    Turn,
    TurnInput,
    Variant,
)

__all__ = [
    "Answer",
    "Assertion",
    "AssertionResult",
    "Case",
    "CaseResult",
    "Checkpoint",
    "CheckpointResult",
    "Defaults",
    "FileRef",
    "Hooks",
    "Limits",
    "Message",
    "Observation",
    "Reply",
    "Run",
    "Selection",
    "SimulatorSpec",
    "Source",
    "Suite",
    "Summary",
    "ToolCall",
    "Turn",
    "TurnInput",
    "TurnResult",
    "Usage",
    "Variant",
    "parse_assertion",
]
