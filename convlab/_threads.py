"""A reused pool of daemon threads for blocking user code (sync function agents, hooks,
tools, graders: everything `convlab._user_code.call_user` runs).

Why not one thread per call: starting a thread costs more than a whole in-process case. Why not
`asyncio.to_thread` or a `ThreadPoolExecutor`: their threads are joined when the interpreter
exits, so one call that never returns would keep the run (and the process) from ending after its
case timed out.

`DaemonPool` starts a thread only when no thread is waiting for work, so it holds as many
threads as calls were in flight at once: at most the run's `parallel`, since the engine never
has more cases going. A call whose case timed out is abandoned where it is: its thread stays
busy (it is a daemon: nobody joins it), and the next call simply gets another thread.
`close()` at the run's end lets the waiting threads go and never waits on a busy one. Threads
that wait longer than `IDLE_S` for work leave on their own, in case nobody closes the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE_S", "DaemonPool", "call_caught"]

IDLE_S = 30.0
"""A thread that has had no work for this long leaves the pool."""

_Job = tuple[Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


def call_caught(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    """`(True, fn(*args))`, or `(False, the exception)`: what a worker thread hands back to
    the event loop. User code's SystemExit or KeyboardInterrupt is that call's error, a
    RuntimeError: raised into the loop it would end the whole run."""
    try:
        return True, fn(*args)
    except (SystemExit, KeyboardInterrupt) as exc:
        name = getattr(fn, "__qualname__", repr(fn))
        return False, RuntimeError(f"{name} raised {type(exc).__name__}({exc})")
    except BaseException as exc:
        return False, exc


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # the caller gave up (its case timed out): nobody wants the answer
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _call(job: _Job, done: Callable[[], bool] = lambda: False) -> bool:
    """Run one job on this thread and hand its outcome to the job's event loop; `done()`
    runs in between: the pool counts the thread free before the caller can send another
    call (else that call would start a thread of its own). Returns what `done()` said: whether
    the thread stays in the pool."""
    fn, args, loop, future = job
    ok, value = call_caught(fn, args)
    stay = done()
    with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
        loop.call_soon_threadsafe(_settle, future, ok, value)
    return stay


class DaemonPool:
    """Daemon threads reused from call to call (see the module docstring)."""

    def __init__(self, name: str = "convlab-call", idle_s: float = IDLE_S) -> None:
        self.name, self.idle_s = name, idle_s
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        """Threads waiting for work minus jobs queued for them: > 0 means a job put now is
        taken by a waiting thread, so no thread needs starting."""
        self._closed = False
        self.threads = 0
        """Threads alive now (busy or waiting)."""
        self.started = 0
        """Threads started since the pool was made."""

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` on a pool thread; cancelling the await abandons the call (its thread
        finishes it unobserved) and never blocks."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job: _Job = (fn, args, loop, future)
        with self._lock:
            if self._closed:  # closed by a run that ended while another still calls
                threading.Thread(target=_call, args=(job,), name=self.name, daemon=True).start()
            else:
                self._jobs.put(job)
                if self._idle > 0:
                    self._idle -= 1
                else:
                    self._start()
        return await future

    def _start(self) -> None:
        self.threads += 1
        self.started += 1
        threading.Thread(target=self._work, name=self.name, daemon=True).start()

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            try:
                job = jobs.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if jobs.empty():  # no job was queued for this thread meanwhile
                        self._idle -= 1
                        self.threads -= 1
                        return
                continue
            if job is None:  # close(): let this thread go
                return
            stay = _call(job, self._free)
            del job  # hold no reference to the answer while waiting for the next call
            if not stay:
                return

    def _free(self) -> bool:
        """This thread's call returned: it takes the next job (the pool is open) or leaves."""
        with self._lock:
            if self._closed:
                self.threads -= 1
                return False
            self._idle += 1
            return True

    def close(self) -> None:
        """Let the waiting threads go; busy ones (hung calls) leave when they return, and
        are never waited on. A closed pool still runs calls, each on a thread of its own."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in range(max(0, self._idle)):
                self.threads -= 1
                self._jobs.put(None)
            self._idle = 0
