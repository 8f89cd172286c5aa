"""The files and texts behind record and replay (convlab.agents.cache): the canonical JSON a
call's key is the hash of, lenient JSON reading, and reading a recording that is a plain file
and nothing else."""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

import msgspec

from convlab.agents._json import loads_exact

__all__ = ["_DECODER", "_canonical", "_json_or_text", "_loads", "_read_plain", "_recorded_base"]


_SORTED = msgspec.json.Encoder(order="sorted")
_DECODER = msgspec.json.Decoder()
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_FLOAT = re.compile(rb"[0-9][.eE]")


def _canonical(value: Any, plain: bool = False) -> str:
    """The text a key is the hash of: sorted, compact JSON, as the json module writes it.

    `plain`: `value` holds only what msgspec parses JSON into (text, exact integers, finite
    floats, booleans, null, lists, objects). msgspec then writes the same bytes, several
    times faster, but for floats (`1e-07` against `1e-7`): with one, the json module writes
    it, so every key stays what it was and recordings made before still replay.
    """
    if plain:
        out = _SORTED.encode(value)
        if not _FLOAT.search(_STRINGS.sub(b"", out)):
            return out.decode()
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _loads(data: bytes | str) -> Any:
    """Parse JSON: msgspec (several times faster), else the json module, which also reads
    what msgspec refuses (NaN), so a value reads as it always did."""
    try:
        return _DECODER.decode(data)
    except ValueError:
        return json.loads(data)


def _json_or_text(raw: bytes | str) -> tuple[Any, bool]:
    """(value, is_json): a body as JSON when it parses, else as text, read as the agents read
    it (`convlab.agents._json`: integers past 64 bits exact, a `-0` a negative zero), so a
    replayed body is the live one."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        return loads_exact(text), True
    except ValueError:
        return text, False


_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _read_plain(path: str) -> bytes:
    """The bytes of a regular file in a real folder; OSError for anything else: a link (the
    file's or its folder's), a FIFO or a device (opened without blocking, then refused).

    Raises:
        FileNotFoundError: Nothing there.
        OSError: Something there that is not a plain file in a plain folder.
    """
    if not stat.S_ISDIR(os.lstat(os.path.dirname(path)).st_mode):
        raise OSError(0, "its folder is a link, not a folder in the cache")
    fd = os.open(path, os.O_RDONLY | _NO_FOLLOW)  # a link: ELOOP; a FIFO: opens at once
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        return file.read()


def _recorded_base(doc: dict[str, Any]) -> str | None:
    """The canonical text of a recording's request, as its key was made from it."""
    try:
        return _canonical(
            [doc.get("kind"), doc.get("request"), doc.get("run"), doc.get("repetition")]
        )
    except (TypeError, ValueError):
        return None
