"""One small registry type: decorators fill plain dicts, a miss suggests close names."""

from __future__ import annotations

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

    def get(self, name: str) -> T:
        """Return the entry for `name`, or raise UnknownNameError with suggestions."""
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name) from None

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
