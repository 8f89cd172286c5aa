"""convlab: evaluate conversational agents from a notebook, a script or CI.

Example:
    >>> import convlab as cl
    >>> suite = cl.load("examples/expense/")            # doctest: +SKIP
    >>> run = cl.run(suite, cl.agents.demo("expense"))  # doctest: +SKIP
"""

from typing import TYPE_CHECKING, Any

from convlab import agents
from convlab._options import options
from convlab.errors import (
    AgentError,
    AgentHTTPError,
    AgentResponseError,
    AgentTimeoutError,
    ConvlabError,
    ExecutorError,
    FormatError,
    HistoryError,
    JudgeNotConfiguredError,
    MissingDependencyError,
    NotebookError,
    Problem,
    RegexTimeoutError,
    ReplayMissError,
    ReportInputError,
    SelectionError,
    StoreError,
    SuiteError,
    UnknownNameError,
)
from convlab.formats import load
from convlab.model import (
    Answer,
    AssertionResult,
    Case,
    CaseResult,
    ErrorInfo,
    Message,
    Observation,
    Reply,
    Run,
    Suite,
    ToolCall,
    Turn,
    TurnResult,
)
from convlab.model.experiment import Experiment

__version__ = "0.1.0"

# Public names defined in modules that load heavier code: imported on first use
# (`executors` is the subpackage itself).
_LAZY = {
    "arun": "convlab.api",
    "ask": "convlab.api",
    "cached": "convlab.agents.cache",
    "check": "convlab.checks.api",
    "compare": "convlab.analysis.compare",
    "evaluator": "convlab.checks._core",
    "executors": "convlab.executors",
    "history": "convlab._history",
    "load_experiment": "convlab.analysis.experiment_io",
    "load_run": "convlab.analysis.load",
    "run": "convlab.api",
    "RunHandle": "convlab.api",
    "Comparison": "convlab.analysis.compare",
    "AgentContext": "convlab.agents.protocol",
    "start": "convlab.api",
}

if TYPE_CHECKING:
    from convlab import executors
    from convlab._history import history
    from convlab.agents.cache import cached
    from convlab.agents.protocol import AgentContext
    from convlab.analysis.compare import Comparison
    from convlab.analysis.experiment_io import load_experiment
    from convlab.api import RunHandle, arun, ask, run, start
    from convlab.checks._core import evaluator


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext convlab`: the `%%ask AGENT` cell magic and the `%convlab ...` line magic."""
    from convlab.notebook.magics import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name])
        value = module if module.__name__ == f"convlab.{name}" else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'convlab' has no attribute {name!r}")


__all__ = [
    "AgentContext",
    "AgentError",
    "AgentHTTPError",
    "AgentResponseError",
    "AgentTimeoutError",
    "Answer",
    "AssertionResult",
    "Case",
    "CaseResult",
    "Comparison",
    "ConvlabError",
    "ErrorInfo",
    "ExecutorError",
    "Experiment",
    "FormatError",
    "HistoryError",
    "JudgeNotConfiguredError",
    "Message",
    "MissingDependencyError",
    "NotebookError",
    "Observation",
    "Problem",
    "RegexTimeoutError",
    "ReplayMissError",
    "Reply",
    "ReportInputError",
    "Run",
    "RunHandle",
    "SelectionError",
    "StoreError",
    "Suite",
    "SuiteError",
    "ToolCall",
    "Turn",
    "TurnResult",
    "UnknownNameError",
    "__version__",
    "agents",
    "arun",
    "ask",
    "cached",
    "check",
    "compare",
    "evaluator",
    "executors",
    "history",
    "load",
    "load_experiment",
    "load_run",
    "options",
    "run",
    "start",
]
