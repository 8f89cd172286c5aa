"""The loop bridge: run the async engine from scripts, notebook cells and the CLI.

No running loop (script, CLI): `asyncio.run`. A running loop (a Jupyter cell): the engine
runs on a private loop in a worker thread while the caller blocks; Ctrl-C / the kernel's
stop button cancels it cleanly and the partial result comes back. nest_asyncio is never
applied: it drops queued cells under "Run All" and has crashed kernels.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

__all__ = ["BackgroundLoop", "run_sync"]

T = TypeVar("T")


class BackgroundLoop(Generic[T]):
    """A coroutine running on its own event loop in a daemon thread."""

    def __init__(
        self, factory: Callable[[], Coroutine[Any, Any, T]], name: str = "convlab"
    ) -> None:
        self._factory = factory
        self._ready = threading.Event()
        self._finished = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[T] | None = None
        self._result: T | None = None
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self._factory())
            self._ready.set()
            self._result = loop.run_until_complete(self._task)
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                self._finished.set()

    def cancel(self) -> None:
        """Ask the coroutine to stop (it keeps what finished)."""
        if self._loop is not None and self._task is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._task.cancel)

    @property
    def done(self) -> bool:
        """Whether the coroutine has finished.

        An Event, not `thread.is_alive()`: on Python 3.11 a KeyboardInterrupt inside
        `Thread.join` can leave a live thread looking finished (CPython gh-90882).
        """
        return self._finished.is_set()

    @property
    def result(self) -> T | None:
        """The coroutine's result once it finished (None before, or if it raised)."""
        return self._result if self.done else None

    def wait(self, timeout: float | None = None) -> T:
        """Block until the coroutine finishes and return its result (or raise its error)."""
        if not self._finished.wait(timeout):
            raise TimeoutError("the run is still going")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code, loop or no loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    bg = BackgroundLoop(factory)
    while True:
        try:
            if bg._finished.wait(0.1):
                return bg.wait()
        except KeyboardInterrupt:  # the kernel's stop button: cancel, keep what finished
            bg.cancel()
