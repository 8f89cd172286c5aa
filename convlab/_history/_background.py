"""Recording off the path the user waits on: jobs handed to one background thread, in order.

A run hands its recording over when it ends and returns at once; the thread computes what the
row needs and writes it. Reading the history (`cl.history()`, `cl.load_run`, `convlab
history`) first waits for this process's recordings, so a run is listed as soon as it has
returned; a process that ends first waits for them at exit (up to EXIT_WAIT_S).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["EXIT_WAIT_S", "later", "wait"]

EXIT_WAIT_S = 300.0
"""The longest a process that ends waits for its recordings to be written."""

_cond = threading.Condition()
_jobs: deque[Callable[[], object]] = deque()
_busy = [0]
"""Jobs handed over and not yet done (queued or running)."""
_worker: list[threading.Thread] = []
_hooked = [False]


def _work() -> None:
    """Do the jobs handed over, in order; the thread ends when none is left (the next job
    starts another), so nothing of convlab's lingers in a process between runs."""
    while True:
        with _cond:
            if not _jobs:
                _worker.clear()  # under the lock: a job handed over now starts a new thread
                return
            job = _jobs.popleft()
        try:
            job()
        except Exception:  # a job says its own problems (record_run warns)
            continue
        finally:
            with _cond:
                _busy[0] -= 1
                _cond.notify_all()


def later(job: Callable[[], object]) -> None:
    """Run `job` on the background thread, after the jobs handed over before it."""
    with _cond:
        if not _worker:
            thread = threading.Thread(target=_work, name="convlab-history", daemon=True)
            _worker[:] = [thread]
            thread.start()
        if not _hooked[0]:
            atexit.register(wait, EXIT_WAIT_S)
            _hooked[0] = True
        _busy[0] += 1
        _jobs.append(job)
        _cond.notify_all()


def wait(timeout: float | None = None) -> bool:
    """Block until every job handed over so far is done (at most `timeout` seconds); whether
    they all are. Never waits on the background thread itself."""
    if _worker and threading.current_thread() is _worker[0]:
        return True
    with _cond:
        return _cond.wait_for(lambda: _busy[0] == 0, timeout)


def _forget() -> None:  # a forked child has no background thread and none of its jobs
    global _cond
    _cond = threading.Condition()
    _jobs.clear()
    _busy[0] = 0
    _worker.clear()


os.register_at_fork(after_in_child=_forget)
