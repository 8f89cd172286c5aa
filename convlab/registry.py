"""One small registry type: decorators fill plain dicts, a miss suggests close names."""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from convlab.errors import UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind (assertion kinds, formats, agent specs).

    Example:
        >>> kinds: Registry[int] = Registry("assertion kind")
        >>> @kinds.register("answer")
        ... def _() -> int: return 42
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        """Return a decorator that registers its target under `name` (and `aliases`)."""

        def deco(item: T) -> T:
            for key in (name, *aliases):
                self._items[key] = item
            return item

        return deco

    def add(self, name: str, item: T) -> None:
        """Register `item` under `name`, replacing any previous entry."""
        self._items[name] = item

    def unregister(self, name: str) -> T:
        """Remove the entry for `name` and return it (UnknownNameError if there is none)."""
        if name not in self._items:
            raise self.unknown(name)
        return self._items.pop(name)

    @contextlib.contextmanager
    def registered(self, name: str, item: T) -> Iterator[T]:
        """Register `item` under `name` for a `with` block, then put back what was there.

        Example:
            >>> kinds: Registry[int] = Registry("assertion kind")
            >>> with kinds.registered("answer", 42):
            ...     kinds.get("answer")
            42
            >>> "answer" in kinds
            False
        """
        before = {name: self._items[name]} if name in self._items else {}
        self._items[name] = item
        try:
            yield item
        finally:
            self._items.pop(name, None)
            self._items.update(before)

    def entries(self) -> dict[str, T]:
        """A copy of the registered entries by name (aliases included)."""
        return dict(self._items)

    def get(self, name: str) -> T:
        """Return the entry for `name`, or raise UnknownNameError with suggestions."""
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name) from None

    def find(self, name: str) -> T | None:
        """The entry for `name`, or None (the per-check path: no exception to raise)."""
        return self._items.get(name)

    def unknown(self, name: str) -> UnknownNameError:
        """Build the error for a name that is not registered."""
        close = difflib.get_close_matches(name, list(self._items), n=2, cutoff=0.6)
        return UnknownNameError(self.kind, name, close, sorted(self._items))

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)
