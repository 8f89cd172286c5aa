"""Keeping big suites and runs small: one fields-set per kind of object, not one per object.

Every pydantic model instance carries `__pydantic_fields_set__` (the names given when it was
built), a set of at least 216 bytes. A JSONL case is about seven model objects (case, limits,
hooks, source, message, assertions), so on a 100,000-line file these sets alone take
~150 MB and seven more objects per case for the cyclic GC to walk. The names given are the
same for most objects of one class, so objects built with the same names share one set
(what `model_construct(_fields_set=...)` also allows). Values are never shared. The only
visible effect: assigning a field of one object afterwards marks that field as set for the
objects sharing its set, which matters to `model_dump(exclude_unset=True)` alone.
"""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["RESULT_SETS", "FieldSets", "compact"]

_set_attr = object.__setattr__


class FieldSets:
    """Shared fields-sets for the objects of one load (never shared across loads)."""

    __slots__ = ("_sets",)

    def __init__(self) -> None:
        self._sets: dict[type | tuple[type, frozenset[str]], set[str]] = {}

    def share(self, model: BaseModel) -> None:
        """Give `model` the shared set equal to its own."""
        own = model.__pydantic_fields_set__
        key = (model.__class__, frozenset(own)) if own else model.__class__
        shared = self._sets.setdefault(key, own)
        if shared is not own:
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


RESULT_SETS = FieldSets()
"""Shared by every result record of the process: a result is about 45 model objects whose
fields-sets were half of its memory (6.5 of 12.5 KB) before sharing."""


def compact(model: BaseModel) -> None:
    """Share the fields-sets of a result record's whole tree (see RESULT_SETS)."""
    RESULT_SETS.share_tree(model)
