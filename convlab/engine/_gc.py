"""No garbage-collection storms during a run.

A run allocates a few objects per instance and frees them at once; the cyclic collector,
triggered every few hundred allocations, would walk every live object each time it reaches
the oldest generation, the loaded suite's hundreds of thousands included. So while any run
is going on, the objects that existed before it (the suite, imported modules) are moved out
of the collector's sight (`gc.freeze`), and collections are much rarer. The last run to
end restores the thresholds, also when it fails; runs in several threads at once share one
quiet period.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc", "quiet_gc"]

_lock = threading.Lock()
_active = 0
_saved: tuple[int, ...] = ()
RUN_THRESHOLD = 70_000
"""Allocations between young collections during a run (CPython's default is 700)."""


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic collection while the body builds many records that all stay (reading a
    saved run or store back): the collector would rescan the growing heap each time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Freeze what exists and raise the collection threshold while the body runs."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(RUN_THRESHOLD, _saved[0]), *_saved[1:])
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                gc.set_threshold(*_saved)
                gc.unfreeze()
