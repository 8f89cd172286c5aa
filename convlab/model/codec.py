"""The one encoding of records and runs: msgspec JSON, fields at their default left out.

A store line, a `.json` or `.jsonl` save, `to_dict()`/`to_json()` and anything shipped between
processes are this encoding of the record; reading one back is one typed decode, which checks
every field. Values a record holds that JSON has no type for are written as pydantic writes
them: a pydantic model (a message, a tool call, a turn's input) by its own dump, any other
value (a set, a path, a number type of another library) by `pydantic_core.to_jsonable_python`,
and an object it does not know either as its `repr`. So only text that is not Unicode (a
lone surrogate) cannot be encoded: `valid_unicode` replaces it.

`FORMAT` is the version of this encoding; what earlier versions wrote is read by
convlab.model._legacy, and a version this code does not know is refused (`FormatError`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from convlab._readable import is_missing
from convlab.errors import FormatError

__all__ = [
    "FORMAT",
    "KNOWN_FORMATS",
    "FormatError",
    "check_format",
    "convert",
    "decode_as",
    "encode",
    "json_cell",
    "to_builtins",
    "valid_unicode",
    "wrapped",
]

T = TypeVar("T")

FORMAT = 2
"""The version of the encoding this code writes (a run's `format_version`). 1: the compact
lines of convlab before records were msgspec structs (read by convlab.model._legacy)."""
KNOWN_FORMATS = (1, 2)


def check_format(version: Any, where: str) -> int:
    """`version` if this code reads it, else a `FormatError` saying which it is."""
    if version is None:
        return 1
    if isinstance(version, int) and not isinstance(version, bool) and version in KNOWN_FORMATS:
        return version
    raise FormatError(
        f"{where}: written in format {version!r}, which this convlab does not read (it reads "
        f"formats {', '.join(map(str, KNOWN_FORMATS))}); read it with the convlab that wrote "
        "it, or a newer one"
    )


def _enc_hook(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_defaults=True)
    items = getattr(value, "__encoded_items__", None)  # a run's Results: lines as they are
    if items is not None:
        return items()
    return to_jsonable_python(value, fallback=repr)


@functools.cache
def _validator(kind: Any) -> Callable[[Any], Any]:
    """pydantic's validation of a model a record holds (a TypeAdapter made once per type)."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return TypeAdapter(kind).validate_python
    raise NotImplementedError(f"cannot read a {kind!r}")


def _dec_hook(kind: Any, value: Any) -> Any:
    return _validator(kind)(value)


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode(value: Any) -> bytes:
    """The JSON of a record, a run or any JSON-ready value holding them."""
    return _ENCODER.encode(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(record: T) -> tuple[T, bool]:
    """`record`, or a copy of it whose text has each lone surrogate (half of a UTF-16 pair:
    not Unicode, so not writable as UTF-8) replaced by U+FFFD; and whether one was."""
    try:
        encode(record)
    except UnicodeEncodeError:
        pass
    else:
        return record, False

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return _SURROGATE.sub("\ufffd", value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    return convert(clean(to_builtins(record)), type(record)), True


def wrapped(head: dict[str, Any], line: bytes) -> bytes:
    """An encoded record (`line`, a JSON object) with `head`'s keys before its own: how a
    store or a save marks what it holds (`{"type": "result", ...}`)."""
    return encode(head)[:-1] + b"," + line[1:]


def to_builtins(value: Any) -> Any:
    """`encode`'s JSON as Python builtins (without writing the text)."""
    return msgspec.to_builtins(value, enc_hook=_enc_hook)


@functools.cache
def _decoder(kind: type) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(kind, dec_hook=_dec_hook)


def decode_as(text: str | bytes, kind: type[T]) -> T:
    """The `kind` a JSON text holds, every field checked; a `ValueError`
    (`msgspec.ValidationError` or `msgspec.DecodeError`) says what is wrong and where."""
    out: T = _decoder(kind).decode(text)  # type: ignore[arg-type]
    return out


def convert(data: Any, kind: type[T]) -> T:
    """The `kind` that builtins (a decoded JSON value) describe, every field checked."""
    out: T = msgspec.convert(data, kind, dec_hook=_dec_hook)
    return out


def json_cell(value: Any) -> Any:
    """A DataFrame cell as a JSON value: a missing one (None, NaN, NaT, NA) as null, a
    timestamp as ISO text, a numpy or pandas scalar as the Python number; other values JSON
    has no type for as their text."""
    if is_missing(value):
        return None
    if isinstance(value, str | bool | int | float | dict | list):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy and pandas scalars
        return value.item()
    return str(value)
