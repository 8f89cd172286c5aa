"""pydantic's construction, copy, assignment and dump, without what the per-case path need
not pay for: validation of values the engine made itself (a dozen fields per case), and the
Python wrappers of `model_dump` / `model_dump_json` around pydantic's serializer.

`build`, `copied` and `assign` are only for models that validate no assignment and keep no
private state, with values of the fields' types. tests/test_trusted.py holds the models so,
and each helper equal to pydantic's own construction, copy, assignment or dump.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["assign", "build", "copied", "dumped", "dumped_json", "fields_of"]

M = TypeVar("M", bound=BaseModel)

_IMMUTABLE = (type(None), bool, int, float, str, bytes, tuple, frozenset)

_new = object.__new__
_set = object.__setattr__


def assign(model: BaseModel, **values: Any) -> None:
    """Set `values` on `model` exactly as pydantic's own assignment does for a model that
    validates no assignment (each pydantic `__setattr__` costs about 1.5 us)."""
    model.__dict__.update(values)
    model.__pydantic_fields_set__.update(values)


Makers = tuple[tuple[str, Callable[[], Any]], ...]


@functools.cache
def _defaults(cls: type[BaseModel]) -> tuple[dict[str, Any], Makers, frozenset[str], bool]:
    """Every field in declaration order with its default (pydantic's serializer reads a
    model's `__dict__` in that order), a maker for each default a model needs a fresh copy
    of (a default factory, or a mutable default, which pydantic copies), the required
    fields, and whether the model keeps extra fields."""
    template: dict[str, Any] = {}
    makers: list[tuple[str, Callable[[], Any]]] = []
    required: list[str] = []
    for name, info in cls.model_fields.items():
        template[name] = None
        if info.default_factory is not None:
            makers.append((name, info.default_factory))  # type: ignore[arg-type]
        elif info.is_required():
            required.append(name)
        elif isinstance(info.default, _IMMUTABLE):
            template[name] = info.default
        else:
            makers.append((name, functools.partial(copy.deepcopy, info.default)))
    return template, tuple(makers), frozenset(required), cls.model_config.get("extra") == "allow"


def build(cls: type[M], **values: Any) -> M:
    """`cls(**values)` for values already of the fields' types, without validating them
    (pydantic's validation of a result model costs 3-8 us); the fields given are its set
    fields, as they would be. No model validator runs: the caller settles what one would."""
    model = _new(cls)
    _set(model, "__dict__", fields_of(cls, values))
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", {} if _defaults(cls)[3] else None)
    _set(model, "__pydantic_private__", None)
    return model


def fields_of(cls: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """The `__dict__` `build(cls, **values)` gives its model: every field, in the class's
    order, the defaults filled in (the engine writes a line from it without the model)."""
    template, makers, required, _ = _defaults(cls)
    data = template.copy()
    data.update(values)  # a field's place stays its place in the class
    if len(data) != len(template) or not required <= values.keys():
        _refuse(cls, values)
    for name, make in makers:
        if name not in values:
            data[name] = make()
    return data


def _refuse(cls: type[BaseModel], values: dict[str, Any]) -> None:
    template, _, required, _ = _defaults(cls)
    unknown = sorted(set(values) - set(template))
    missing = sorted(required - values.keys())
    raise TypeError(f"{cls.__name__}: unknown fields {unknown}, missing fields {missing}")


def copied(model: M) -> M:
    """`model.model_copy()`: a shallow copy, as pydantic's `__copy__` makes it (3x faster)."""
    out = _new(type(model))
    _set(out, "__dict__", dict(model.__dict__))
    _set(out, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    extra, private = model.__pydantic_extra__, model.__pydantic_private__
    _set(out, "__pydantic_extra__", None if extra is None else dict(extra))
    _set(out, "__pydantic_private__", None if private is None else dict(private))
    return out


def dumped(model: BaseModel, **options: Any) -> Any:
    """`model.model_dump(**options)`, by pydantic's serializer itself: the method's Python
    wrapper costs as much as dumping a small model (1.5 us of a message's 2.9)."""
    return model.__pydantic_serializer__.to_python(model, **options)


def dumped_json(model: BaseModel, **options: Any) -> str:
    """`model.model_dump_json(**options)`, by pydantic's serializer itself (see `dumped`)."""
    return model.__pydantic_serializer__.to_json(model, **options).decode()
