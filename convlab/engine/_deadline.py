"""Per-case timeouts with one timer per worker, not one per case.

`asyncio.timeout_at` schedules a timer when a case starts and cancels it when the case
ends: about 9 us a case, most of it the loop's heap of cancelled timers. A worker runs its
cases one after another, so one timer can watch them all: it is armed for the current
case's deadline, and when it fires for a case that has ended, it re-arms for the deadline
of the case running now (a timer fires once per timeout, not once per case). A case that
outlives its deadline is cancelled and its `with` block raises TimeoutError, exactly as
`asyncio.timeout_at` would (a stop of the run stays a cancellation).
"""

from __future__ import annotations

import asyncio
from types import TracebackType

__all__ = ["Deadline"]


class Deadline:
    """The deadline of the case the task `task` runs now; `with deadline.at(when):`."""

    __slots__ = ("_armed", "_cancelling", "_expiring", "_handle", "_loop", "_task", "_when")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = task
        self._when: float | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._armed = 0.0
        self._expiring = False
        self._cancelling = 0

    def at(self, when: float) -> Deadline:
        """Watch the case that starts now until loop time `when`."""
        self._when, self._expiring = when, False
        self._cancelling = self._task.cancelling()
        if self._handle is None or self._armed > when:
            self._arm(when)
        return self

    def __enter__(self) -> Deadline:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._when = None
        if self._expiring:  # as asyncio.Timeout: ours, unless a stop was asked meanwhile
            self._expiring = False
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc

    def close(self) -> None:
        """The task runs no more cases: drop the timer."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        when = self._when
        if when is None:  # between cases: the next one arms it again
            return
        if when > self._armed:  # armed for a case that has ended: watch this one
            self._arm(when)
            return
        self._expiring = True
        self._task.cancel()
