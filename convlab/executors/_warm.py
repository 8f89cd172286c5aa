"""The shard workers of this process, kept warm between runs.

A worker (a `ShardActor`) takes a few seconds to start: a Ray worker process, imports,
convlab. A notebook's second run must not pay that again, so the workers a run started stay
after it, and the next run on the same cluster with the same worker settings (CPUs each,
runtime environment) sets itself up on them: one message each. Runs that overlap share
them (each worker keeps each run apart). Workers nobody used for `idle_timeout` seconds are
ended, and so are all of them by `cl.executors.shutdown()` or at exit.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["POOL", "Pool"]


@dataclass
class Pool:
    """Warm workers by what they were started with (see the module docstring)."""

    actors: list[Any] = field(default_factory=list)
    key: tuple[Any, ...] | None = None
    users: int = 0
    """Runs using the workers now."""
    limits: Any = None
    """The `LimitsActor` of this driver's runs (None until a run needs one)."""
    last_used: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _timer: threading.Timer | None = None
    _numbers: itertools.count[int] = field(default_factory=itertools.count)

    def take(
        self, ray: Any, key: tuple[Any, ...], n: int, make: Any, first: int = 0, wide: int = 0
    ) -> tuple[list[Any], int]:
        """`n` workers for a run, from the `first` of `wide` (runs bound together take
        different ones; warm ones first, `make(number)` for the rest) and how many of them
        were warm. Workers started with other settings are ended first."""
        with self._lock:
            if key != self.key:
                self._end(ray)
                self.key = key
            wide = max(wide, n)
            warm = max(0, min(n, len(self.actors) - first))
            while len(self.actors) < min(first + n, wide):
                self.actors.append(make(next(self._numbers)))
            chosen = [self.actors[(first + i) % wide] for i in range(n)]
            self.users += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return chosen, warm

    def add(self, ray: Any, make: Any) -> Any:
        """One more worker (a replacement for one that died), kept warm like the others."""
        with self._lock:
            actor = make(next(self._numbers))
            self.actors.append(actor)
            return actor

    def limiter(self, make: Any) -> Any:
        """The actor holding runs' shared adaptive limits (started on first use, kept)."""
        with self._lock:
            if self.limits is None:
                self.limits = make()
            return self.limits

    def discard(self, actor: Any, ray: Any = None) -> None:
        """A worker that died (or, with `ray`, one to end now): never handed out again."""
        with self._lock, contextlib.suppress(ValueError):
            self.actors.remove(actor)
        if ray is not None:
            with contextlib.suppress(Exception):
                ray.kill(actor)

    def give_back(self, ray: Any, idle_timeout: float) -> None:
        """A run is over: its workers stay, and are ended after `idle_timeout` s unused."""
        with self._lock:
            self.users = max(0, self.users - 1)
            self.last_used = time.monotonic()
            if self.users or not self.actors:
                return
            if self._timer is not None:
                self._timer.cancel()
            timer = threading.Timer(idle_timeout, self._idle, args=(ray, idle_timeout))
            timer.daemon = True
            self._timer = timer
            timer.start()

    def _idle(self, ray: Any, idle_timeout: float) -> None:
        with self._lock:
            if self.users or time.monotonic() - self.last_used < idle_timeout - 0.01:
                return
            self._end(ray)

    def end(self, ray: Any) -> int:
        """End every warm worker (and the limits actor) now; how many workers there were."""
        with self._lock:
            return self._end(ray)

    def _end(self, ray: Any) -> int:
        actors, self.actors, self.key = self.actors, [], None
        limits, self.limits = self.limits, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for actor in [*actors, limits] if limits is not None else actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        return len(actors)


def pool_key(
    connection: object, num_cpus: float, runtime_env: dict[str, Any] | None
) -> tuple[Any, ...]:
    """What makes workers interchangeable: the connection and how they were started."""
    return (id(connection), num_cpus, json.dumps(runtime_env, sort_keys=True, default=str))


POOL = Pool()
"""This process's warm workers."""
