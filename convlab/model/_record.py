"""The base of every result record (convlab.model.records), and how a pydantic model that
users write holds one."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import msgspec
from pydantic import GetPydanticSchema
from pydantic_core import core_schema

from convlab.model.codec import convert, decode_as, encode, to_builtins

__all__ = ["Record", "held_by_pydantic"]

R = TypeVar("R", bound="Record")


class Record(
    msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True, gc=False
):
    """A result record: `to_dict()` and `to_json()` give its encoding (fields left at their
    default are left out, as in a store line); `from_dict` and `from_json` read one back,
    checking every field. Records hold no reference cycles, so the cyclic collector need
    not track them (`gc=False`)."""

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready builtins (dicts, lists, str, numbers, None)."""
        out: dict[str, Any] = to_builtins(self)
        return out

    def to_json(self) -> str:
        """The record's JSON text."""
        return encode(self).decode()

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        """The record `data` describes (as `to_dict` gives it); raises `ValueError` naming the
        field that is wrong."""
        return convert(data, cls)

    @classmethod
    def from_json(cls: type[R], text: str | bytes) -> R:
        """The record a JSON text holds (as `to_json` gives it), checked."""
        return decode_as(text, cls)


def held_by_pydantic(cls: type[R]) -> Any:
    """`cls` as a pydantic field's type: a record is kept as it is, a dict is read as one
    (`Record.from_dict`), and the field dumps as the record's encoding."""

    def schema(source: Any, handler: Any) -> core_schema.CoreSchema:
        def validate(value: Any) -> R:
            return value if isinstance(value, cls) else cls.from_dict(value)

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda value: value.to_dict()
            ),
        )

    return Annotated[cls, GetPydanticSchema(schema)]
