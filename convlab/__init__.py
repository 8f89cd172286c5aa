"""convlab: evaluate conversational agents from a notebook, a script or CI."""

from convlab.errors import (
    AgentError,
    AgentHTTPError,
    AgentResponseError,
    AgentTimeoutError,
    ConvlabError,
    Problem,
    SuiteError,
    UnknownNameError,
)
from convlab.formats import load
from convlab.model import (
    AssertionResult,
    Case,
    CaseResult,
    Message,
    Observation,
    Reply,
    Suite,
    ToolCall,
    Turn,
)

__version__ = "0.1.0"

__all__ = [
    "AgentError",
    "AgentHTTPError",
    "AgentResponseError",
    "AgentTimeoutError",
    "AssertionResult",
    "Case",
    "CaseResult",
    "ConvlabError",
    "Message",
    "Observation",
    "Problem",
    "Reply",
    "Suite",
    "SuiteError",
    "ToolCall",
    "Turn",
    "UnknownNameError",
    "__version__",
    "load",
]
