"""A JSONL file held once, as its bytes: its lines and its cases are read from them on demand.

Why: a large JSONL file took many times its size in memory as text, a list of line strings and
one pydantic Case (several model objects) per line. Here the file's bytes are the only copy
(UTF-8, so about its size whatever the characters), each line is found through an array of its
start offsets (8 bytes a line) and decoded when read, and a big file's cases are a `LazyCases`
sequence that builds a Case from its lines when asked (each case was validated at load, so
building it again cannot fail)."""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from convlab.formats._base import Problems
from convlab.model.suite import Case

__all__ = ["LazyCases", "Lines"]

_BOM = b"\xef\xbb\xbf"
_BLOCK = 1 << 24
"""Bytes searched for newlines at a time (bounds the search's temporary arrays to ~150 MB)."""


def _line_starts(data: bytes, start: int) -> array[int]:
    """Offsets where each line begins, then len(data) + 1 (so line i is starts[i]..[i+1]-1)."""
    starts = array("q", [start])
    if len(data) < _BLOCK >> 6:  # small (most files): numpy's fixed cost is not worth it
        at = data.find(b"\n", start)
        while at >= 0:
            starts.append(at + 1)
            at = data.find(b"\n", at + 1)
        starts.append(len(data) + 1)
        return starts
    view = np.frombuffer(data, dtype=np.uint8)
    for block in range(start, len(data), _BLOCK):
        found = np.flatnonzero(view[block : block + _BLOCK] == 0x0A)
        starts.frombytes((found + (block + 1)).astype(np.int64).tobytes())
    starts.append(len(data) + 1)
    return starts


class Lines(Sequence[str]):
    """The lines of a UTF-8 file (`text.split("\\n")`), each decoded when read.

    A line that is not UTF-8 is recorded once in `problems` (its line and the byte offset in
    the file, as for any file) and reads as blank, so the lines around it are still read.
    """

    def __init__(self, data: bytes, problems: Problems) -> None:
        self.data = data
        self.problems = problems
        self.starts = _line_starts(data, 3 if data.startswith(_BOM) else 0)
        self.bad: set[int] = set()

    def __len__(self) -> int:
        return len(self.starts) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start, end = self.starts[index], self.starts[index + 1] - 1
        try:
            return self.data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            if index not in self.bad:
                self.bad.add(index)
                at = start + exc.start
                message = f"not UTF-8 text: {exc.reason} (byte {at}, 0x{self.data[at]:02x})"
                self.problems.add(index + 1, "", message)
            return ""

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def text(self, first: int, last: int) -> str:
        """Lines first..last (1-based, inclusive) joined, `//` comment lines left blank (as the
        scanner read a pretty-printed object)."""
        if first == last:
            return self[first - 1]
        parts = (self[i] for i in range(first - 1, last))
        return "\n".join("" if p.lstrip().startswith("//") else p for p in parts)


class LazyCases(Sequence[Case]):
    """The cases of a big JSONL file, each built from its lines when read.

    Reading a case twice while the first is still held gives the same object; a case no longer
    held is built again from the file's bytes, so change a case through `model_copy` (or keep
    the case you changed): an in-place change to a case you let go is not kept.
    Equal to a list of the same cases; pickles with the file's bytes.
    """

    def __init__(
        self,
        lines: Lines,
        firsts: array[int],
        lasts: array[int],
        build: Callable[[str, int], Case],
    ) -> None:
        self._lines, self._firsts, self._lasts, self._build = lines, firsts, lasts, build
        self._held: weakref.WeakValueDictionary[int, Case] = weakref.WeakValueDictionary()

    def __len__(self) -> int:
        return len(self._firsts)

    @overload
    def __getitem__(self, index: int) -> Case: ...
    @overload
    def __getitem__(self, index: slice) -> list[Case]: ...
    def __getitem__(self, index: int | slice) -> Case | list[Case]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("case index out of range")
        case = self._held.get(index)
        if case is None:
            first = self._firsts[index]
            case = self._build(self._lines.text(first, self._lasts[index]), first)
            self._held[index] = case
        return case

    def __iter__(self) -> Iterator[Case]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyCases | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like the list it stands for

    def __repr__(self) -> str:
        return f"<{len(self)} cases read from their JSONL lines on demand>"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_held"]  # weak references do not pickle; a new cache is empty
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._held = weakref.WeakValueDictionary()
