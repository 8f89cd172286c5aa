"""Keeping big suites and runs small: one fields-set per kind of object, not one per object.

Every pydantic model instance carries `__pydantic_fields_set__` (the names given when it was
built), a set of at least 216 bytes. A JSONL case is about seven model objects (case, limits,
hooks, source, message, assertions), so on a 100,000-line file these sets alone take
~150 MB and seven more objects per case for the cyclic GC to walk. The names given are the
same for most objects of one class, so objects built with the same names share one set
(what `model_construct(_fields_set=...)` also allows). Values are never shared, and neither
is a change: a shared set is a `_SharedSet`, and the first assignment to a field of an object
holding one gives that object its own copy first (copy on write, installed once per class
on its `__setattr__`), so `model_dump(exclude_unset=True)` of the others is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

__all__ = ["FieldSets"]

_set_attr = object.__setattr__


class _SharedSet(set[str]):
    """A fields-set held by several objects: never changed in place (see `_copy_on_write`)."""

    __slots__ = ()


_PATCHED: set[type] = set()
"""Classes whose `__setattr__` already unshares (set once per class, never removed)."""


def _unshare(model: object) -> None:
    fields = getattr(model, "__pydantic_fields_set__", None)
    if type(fields) is _SharedSet:
        _set_attr(model, "__pydantic_fields_set__", set(fields))


def _copy_on_write(cls: type[BaseModel]) -> None:
    """Make `cls` give an object its own fields-set before any attribute is set or deleted."""
    if cls in _PATCHED:
        return
    _PATCHED.add(cls)
    setter: Callable[[Any, str, Any], None] = cls.__setattr__
    deleter: Callable[[Any, str], None] = cls.__delattr__

    def __setattr__(self: Any, name: str, value: Any) -> None:
        _unshare(self)
        setter(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        _unshare(self)
        deleter(self, name)

    type.__setattr__(cls, "__setattr__", __setattr__)
    type.__setattr__(cls, "__delattr__", __delattr__)


class FieldSets:
    """Shared fields-sets for the objects of one load (never shared across loads)."""

    __slots__ = ("_sets",)

    def __init__(self) -> None:
        self._sets: dict[type | tuple[type, frozenset[str]], _SharedSet] = {}

    def share(self, model: BaseModel) -> None:
        """Give `model` the shared set equal to its own (its own copy on its first change)."""
        own = model.__pydantic_fields_set__
        if type(own) is _SharedSet:
            return
        cls = model.__class__
        key = (cls, frozenset(own)) if own else cls
        shared = self._sets.get(key)
        if shared is None:
            _copy_on_write(cls)
            shared = self._sets[key] = _SharedSet(own)
        _set_attr(model, "__pydantic_fields_set__", shared)

    def share_tree(self, model: BaseModel) -> None:
        """Share the sets of `model` and of every model nested in its fields."""
        self.share(model)
        for value in model.__dict__.values():
            if isinstance(value, BaseModel):
                self.share_tree(value)
            elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
                for item in value:
                    if isinstance(item, BaseModel):
                        self.share_tree(item)
