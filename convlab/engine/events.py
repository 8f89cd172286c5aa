"""The engine's event stream. Consumers (widgets, console, store) subscribe; the engine
knows none of them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from convlab.model.tracebacks import error_text

if TYPE_CHECKING:
    from convlab.model.experiment import Experiment
    from convlab.model.records import CaseResult, TurnResult
    from convlab.model.run import Run

__all__ = [
    "CaseFinished",
    "CaseStarted",
    "CheckpointReached",
    "ConcurrencyChanged",
    "Event",
    "ExperimentEvent",
    "ExperimentFinished",
    "ExperimentListener",
    "ExperimentStarted",
    "Listener",
    "RunFinished",
    "RunStarted",
    "TurnCompleted",
    "VariantEvent",
    "WorkerLog",
    "WorkersChanged",
    "tell",
]


@dataclass(frozen=True)
class RunStarted:
    """A run began; `total` instances are planned (`skipped` of them already stored)."""

    run_id: str
    total: int
    agent: str
    settings: dict[str, Any] = field(default_factory=dict)
    resumed: int = 0


@dataclass(frozen=True)
class CaseStarted:
    """An instance began talking to the agent."""

    key: tuple[str, str, int, int]
    label: str
    mode: str
    name: str | None = None
    worker: str = ""
    """The worker running it when the run is spread over several (`executor=`); "" here."""


@dataclass(frozen=True)
class TurnCompleted:
    """One user turn of an instance finished (observation and its checks)."""

    key: tuple[str, str, int, int]
    turn: TurnResult


@dataclass(frozen=True)
class CheckpointReached:
    """A dynamic case reached a checkpoint."""

    key: tuple[str, str, int, int]
    checkpoint: str
    turn: int


@dataclass(frozen=True)
class CaseFinished:
    """An instance finished with its final result (any status)."""

    result: CaseResult
    label: str = ""


@dataclass(frozen=True)
class RunFinished:
    """The run ended (completed or cancelled)."""

    run: Run


@dataclass(frozen=True)
class ConcurrencyChanged:
    """The agent's adaptive in-flight limit moved (its endpoint answered 429/503, or grew
    back): views show `limit` while it is below `parallel`; None means open again."""

    limit: int | None
    parallel: int
    endpoint: str
    overloads: int = 0


@dataclass(frozen=True)
class WorkersChanged:
    """The run's instances are spread over `workers` live workers (`executor="ray"`);
    `where` names the cluster and the share of `parallel` each worker holds. With no
    worker yet, `where` says what is being done to get some ("starting a local Ray
    cluster…"), since `since` (`time.monotonic()`): views show its own clock."""

    workers: int
    where: str = ""
    since: float | None = None

    @property
    def text(self) -> str:
        """What a view says: `on 2 workers (local Ray cluster, 4 in flight each)`, or what
        is being done while there is no worker yet."""
        if not self.workers and self.since is not None:
            return self.where
        return f"on {self.workers} worker{'' if self.workers == 1 else 's'}" + (
            f" ({self.where})" if self.where else ""
        )


@dataclass(frozen=True)
class WorkerLog:
    """A line a worker logged or printed while it ran instances (never text in the cell)."""

    worker: str
    level: str
    message: str


Event = (
    RunStarted
    | CaseStarted
    | TurnCompleted
    | CheckpointReached
    | ConcurrencyChanged
    | CaseFinished
    | RunFinished
    | WorkersChanged
    | WorkerLog
)
Listener = Callable[[Event], None]


@dataclass(frozen=True)
class ExperimentStarted:
    """An experiment began: its variants (name -> agent description), each to run `total`
    instances of the suite (how many of them a store already held, each variant's own
    RunStarted says)."""

    experiment_id: str
    name: str
    agents: dict[str, str]
    total: int
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VariantEvent:
    """One event of one variant's run inside an experiment."""

    variant: str
    event: Event


@dataclass(frozen=True)
class ExperimentFinished:
    """The experiment ended: every variant's run ended (completed, cancelled or failed)."""

    experiment: Experiment


ExperimentEvent = ExperimentStarted | VariantEvent | ExperimentFinished
ExperimentListener = Callable[[ExperimentEvent], None]
"""A listener of an experiment: its start, every variant's events, its end."""


E = TypeVar("E")


def tell(
    listeners: Sequence[Callable[[E], None]],
    event: E,
    warned: set[int],
    stop: Callable[[], object] | None = None,
) -> None:
    """Hand `event` to every listener (a run's or an experiment's). A broken listener never
    breaks the run, but says so once (`warned` holds who has). A listener that raises what
    is not an Exception (KeyboardInterrupt, SystemExit, ...) stops the run as a stop does
    (`stop`; None when the run has already ended): the finished results are kept."""
    for listener in listeners:
        try:
            listener(event)
        except BaseException as exc:  # consumers must not affect results
            stops = not isinstance(exc, Exception)
            if stops and stop is not None:
                stop()
            if id(listener) in warned:
                continue
            warned.add(id(listener))
            name = getattr(listener, "__qualname__", None) or type(listener).__name__
            then = (
                "the run stops, keeping what finished"
                if stops
                else "its later errors are not reported"
            )
            warnings.warn(
                f"convlab event listener {name} raised {error_text(exc)} "
                f"(on {type(event).__name__}; {then})",
                RuntimeWarning,
                stacklevel=3,
            )
