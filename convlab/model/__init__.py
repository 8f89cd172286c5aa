"""The model: suites and cases, conversations and assertion specs (pydantic: what users
write), and result records (msgspec structs: what the engine makes)."""

from convlab.model.answer import Answer
from convlab.model.assertions import Assertion, parse_assertion
from convlab.model.conversation import Message, Reply, ToolCall, Usage
from convlab.model.records import (
    AssertionResult,
    CaseResult,
    CheckpointResult,
    ErrorInfo,
    Observation,
    TurnResult,
)
from convlab.model.results import Results
from convlab.model.rows import InstanceRow
from convlab.model.run import Run, Summary
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
    "ErrorInfo",
    "FileRef",
    "Hooks",
    "InstanceRow",
    "Limits",
    "Message",
    "Observation",
    "Reply",
    "Results",
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
