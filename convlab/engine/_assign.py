"""Setting several fields of a result model in one call (the engine's per-case path)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["assign"]


def assign(model: BaseModel, **values: Any) -> None:
    """Set `values` on `model` exactly as pydantic's own assignment does for a model that
    validates no assignment (the result models: tests/test_assign.py holds them so).

    Each pydantic `__setattr__` costs about 1.5 us; the engine sets about a dozen fields per
    case, on models it built itself, with values of the fields' types.
    """
    model.__dict__.update(values)
    model.__pydantic_fields_set__.update(values)
