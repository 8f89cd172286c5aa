"""Errors convlab raises, with the location a person needs to fix the cause.

Every exception class of convlab is defined here (a test walks the package). The errors a
user can meet, each exported from `convlab`:
```
ConvlabError                     base of every error convlab raises
├── SuiteError                   bad suite input; .problems lists EVERY problem (file, line, path)
├── UnknownNameError (KeyError)  registry miss: kind, name, did-you-mean, available names
├── AgentError                   an agent could not answer (recorded on the case during a run)
│   ├── AgentHTTPError           status, url, first 200 characters of the body; .retryable
│   ├── AgentTimeoutError        (also a TimeoutError) the agent did not answer in time
│   ├── SelectionError           a structured selection picks no open option, or several
│   └── AgentResponseError       the reply could not be read (malformed JSON, missing path)
├── JudgeNotConfiguredError      a check needs a judge and none is configured (recorded on it)
├── RegexTimeoutError            a check's regex ran past its time limit (recorded on the check)
├── MissingDependencyError       (also an ImportError) an optional extra is not installed
├── ExecutorError                a run cannot go to its workers (an agent that cannot be sent)
├── StoreError                   a results store cannot be used (another suite's, unreadable)
├── FormatError (ValueError)     a saved run or store in a format this convlab does not read
├── HistoryError                 the run history database cannot be read or written
├── ReplayMissError              cache='replay' met a call that was never recorded
├── ReportInputError             a report's input or output path cannot be used
└── NotebookError                a cell of a notebook report failed (.cell, .ename, .evalue)
```
Errors before a run are raised; errors during a run are data on the case's result.

Signals convlab raises and catches itself; none reaches a user:
```
TurnFailed                       a conversation cannot go on (its blame and ErrorInfo)
HookFailed                       a case's before hook raised
ToolFailed                       a tool call failed; its text goes back to the model
BodyRejected                     serve-demo will not read a request body (413/400)
DemoAgentNotFound (LookupError)  serve-demo has no agent of the requested name (404)
JSONLimit                        a suite's JSON data is too big or too deep (a Problem)
HelpPrinted                      a magic printed its --help: nothing else to do
YAMLBudgetError (MarkedYAMLError) a YAML document too big once its aliases are expanded
```
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from convlab.model.blame import Blame
    from convlab.model.records import ErrorInfo

from convlab._readable import visible

__all__ = [
    "NO_JUDGE",
    "SHOWN_PROBLEMS",
    "AgentError",
    "AgentHTTPError",
    "AgentResponseError",
    "AgentTimeoutError",
    "BodyRejected",
    "ConvlabError",
    "DemoAgentNotFound",
    "ExecutorError",
    "FormatError",
    "HelpPrinted",
    "HistoryError",
    "HookFailed",
    "JSONLimit",
    "JudgeNotConfiguredError",
    "MissingDependencyError",
    "NotebookError",
    "Problem",
    "RegexTimeoutError",
    "ReplayMissError",
    "ReportInputError",
    "SelectionError",
    "StoreError",
    "SuiteError",
    "ToolFailed",
    "TurnFailed",
    "UnknownNameError",
    "YAMLBudgetError",
    "shown_problems",
]


class ConvlabError(Exception):
    """Base of every error convlab raises; its text shows control characters as `\\xNN`
    (a message may quote an agent's reply or a file's bytes: they never drive a terminal)."""

    def __str__(self) -> str:
        return visible(super().__str__())


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a suite file, and where it is."""

    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


SHOWN_PROBLEMS = 200
"""The most problems a SuiteError's message lists (all are in `.problems`): a file of a
million bad lines must not print a million lines."""


class SuiteError(ConvlabError):
    """A suite could not be loaded; `.problems` lists every problem found, not only the first.

    The message shows the first SHOWN_PROBLEMS of them and says how many more there are.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__(shown_problems(self.problems) or "invalid suite")

    def __reduce__(self) -> tuple[Any, ...]:  # survives pickling (process pools, xdist)
        return (type(self), (self.problems,))

    @classmethod
    def one(cls, file: str, line: int | None, path: str, message: str) -> SuiteError:
        """Build an error holding a single problem."""
        return cls([Problem(file, line, path, message)])


def shown_problems(problems: list[Problem]) -> str:
    """The problems one a line, the first SHOWN_PROBLEMS of them, then `... and N more`."""
    lines = [str(p) for p in problems[:SHOWN_PROBLEMS]]
    more = len(problems) - SHOWN_PROBLEMS
    if more > 0:
        lines.append(f"... and {more:,} more problem{'s' if more > 1 else ''}")
    return "\n".join(lines)


class UnknownNameError(ConvlabError, KeyError):
    """A name is not in a registry; the message suggests the closest names."""

    def __init__(self, kind: str, name: str, suggestions: list[str], available: list[str]) -> None:
        self.kind, self.name = kind, name
        self.suggestions, self.available = suggestions, available
        hint = f" Did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        names = ", ".join(available[:30]) + (", ..." if len(available) > 30 else "")
        super().__init__(f"unknown {kind} {name!r}.{hint} Registered: {names}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.kind, self.name, self.suggestions, self.available))

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return visible(self.args[0])


class AgentError(ConvlabError):
    """The agent could not produce a reply."""

    retryable: bool = False


class AgentHTTPError(AgentError):
    """An HTTP agent got an error status; 429 and 5xx are retryable."""

    def __init__(
        self, status: int, url: str, body: str = "", retry_after: float | None = None
    ) -> None:
        self.status, self.url, self.body, self.retry_after = status, url, body[:200], retry_after
        self.retryable = status == 429 or status >= 500
        super().__init__(f"HTTP {status} from {url}" + (f": {self.body}" if self.body else ""))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status, self.url, self.body, self.retry_after))


class AgentTimeoutError(AgentError, TimeoutError):
    """The agent did not answer within its timeout."""

    retryable = True


class SelectionError(AgentError):
    """A structured selection picks no open option, or more than one (intention-kernel's codes)."""


class AgentResponseError(AgentError):
    """The agent answered, but the answer could not be read."""


NO_JUDGE = (
    "no judge is configured: pass one to run(..., judge=...) (or convlab.check(..., judge=...)),"
    " e.g. judge='openai:gpt-4o-mini' for an OpenAI-compatible model, or a function"
    " judge(messages) -> str"
)
"""The error message of every judge-based check when no judge is configured."""


class JudgeNotConfiguredError(ConvlabError):
    """A check needs a judge and none is configured; the message says how to give one."""

    blame = "judge"

    def __init__(self, message: str = NO_JUDGE) -> None:
        super().__init__(message)


class RegexTimeoutError(ConvlabError):
    """A check's regex search ran past its time limit (catastrophic backtracking)."""

    blame = "suite"

    def __init__(self, pattern: str, text: str, limit: float) -> None:
        self.pattern, self.limit = pattern, limit
        super().__init__(
            f"regex {pattern!r} ran past its {limit:g} s limit on a {len(text)}-character "
            "text and was stopped: the pattern backtracks catastrophically (nested or "
            "overlapping repeats such as (a|aa)+ or (a+)+); rewrite it so each character "
            "can match one way only"
        )


class MissingDependencyError(ConvlabError, ImportError):
    """An optional dependency is missing; the message gives the pip command."""

    def __init__(self, feature: str, extra: str) -> None:
        self.feature, self.extra = feature, extra
        super().__init__(f"{feature} needs an optional extra: pip install 'convlab[{extra}]'")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.feature, self.extra))


class ExecutorError(ConvlabError):
    """A run could not be spread over its workers: an agent, simulator, judge or hook that
    cannot be sent to them (the message names the attribute), a worker running another
    convlab, a cluster that cannot be reached. Raised before any instance starts."""


class StoreError(ConvlabError):
    """The results store cannot be used (another suite's store, unreadable file)."""


class FormatError(ConvlabError, ValueError):
    """A saved run or store written in a format this version of convlab does not read."""


class HistoryError(ConvlabError):
    """The run history database (`history.db` in CONVLAB_HOME, or ~/.convlab) cannot be used:
    it is damaged, written by a newer convlab, or cannot be opened. The message names the
    file and what to do; a run whose entry cannot be written still completes."""


class ReplayMissError(ConvlabError):
    """`cache="replay"` met a call that was never recorded: it fails that case, never goes live.

    The message names the case, the turn, the call (agent, simulator or judge) and the file
    that is missing. Not the agent's fault: `blame` says so.
    """

    blame = "infrastructure"

    def __init__(
        self, message: str, *, case: str = "", turn: int = 0, role: str = "agent", key: str = ""
    ) -> None:
        self.case, self.turn, self.role, self.key = case, turn, role, key
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_replay_miss, (str(self), self.case, self.turn, self.role, self.key))


def _replay_miss(message: str, case: str, turn: int, role: str, key: str) -> ReplayMissError:
    return ReplayMissError(message, case=case, turn=turn, role=role, key=key)


class ReportInputError(ConvlabError):
    """The report's input or output path cannot be used (missing file, unsupported suffix)."""


class NotebookError(ConvlabError):
    """Executing a notebook failed: `.cell` (1-based position), `.ename`, `.evalue`."""

    def __init__(self, path: str, cell: int | None, ename: str, evalue: str) -> None:
        self.path, self.cell, self.ename, self.evalue = path, cell, ename, evalue
        where = f"cell {cell}" if cell is not None else "the kernel"
        super().__init__(f"{path}: {where} failed: {ename}: {evalue}".rstrip(": "))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.cell, self.ename, self.evalue))


# Signals convlab raises and catches itself: none reaches a user.


class TurnFailed(Exception):
    """The conversation cannot go on (the agent or the simulator failed, a checkpoint could
    not be evaluated); `blame` is whose fault that is, classified where it was caught, and
    `info` the exception behind it, when one was raised."""

    def __init__(self, message: str, blame: Blame, info: ErrorInfo | None = None) -> None:
        super().__init__(message)
        self.blame: Blame = blame
        self.info = info


class HookFailed(Exception):
    """A case's before hook raised: the instance errs with the hook's blame."""

    def __init__(self, message: str, original: BaseException) -> None:
        super().__init__(message)
        self.original = original


class ToolFailed(Exception):
    """A tool call could not run (bad arguments) or raised; the text goes back to the model."""


class BodyRejected(Exception):
    """A request body serve-demo does not read: its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class DemoAgentNotFound(LookupError):
    """serve-demo has no agent of the requested model name."""


class JSONLimit(Exception):
    """A suite's JSON data holds too many values or nests too deep; `loc` is where."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.loc: list[int | str] = []


class HelpPrinted(Exception):
    """`--help` was printed: nothing else to do."""


class YAMLBudgetError(yaml.MarkedYAMLError):
    """A document too big once its aliases are expanded (an alias bomb), or too long."""
