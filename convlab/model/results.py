"""A run's results: a list of `CaseResult` to its reader, held as encoded lines.

A finished instance is kept as its record's encoding (convlab.model.codec), end to end in one
buffer with the others, and decoded the first time it is read; the record is then kept, so
it is the same object on every read and a change to it sticks. One buffer rather than a
bytes object per line: lines that size would be the small-object allocator's, whose arenas
the run's short-lived objects share and keep resident.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, MutableSequence
from typing import Any, overload

import msgspec

from convlab.model.codec import decode_as, encode
from convlab.model.records import CaseResult
from convlab.model.rows import InstanceRow, instance_row

__all__ = ["Results"]


class Results(MutableSequence[CaseResult]):
    """Case results kept as lines until read. It compares equal to the list of its results,
    pickles and deep-copies as that list, and encodes as it (its lines as they are)."""

    __slots__ = ("_buf", "_ends", "_objs", "_starts", "_status")

    def __init__(self, results: Iterable[CaseResult] = ()) -> None:
        self._buf = bytearray()
        self._starts = array("q")
        """Where each result's line starts in `_buf`; -1: the result is held as a record."""
        self._ends = array("q")
        self._status: list[str] = []
        self._objs: list[CaseResult | None] = []
        for r in results:
            self.append(r)

    def add_line(self, line: bytes | memoryview, status: str) -> None:
        """Keep a result as its encoded line (not decoded until read) and its status."""
        buf = self._buf
        self._starts.append(len(buf))
        buf += line
        self._ends.append(len(buf))
        self._status.append(status)
        self._objs.append(None)

    def add_from(self, other: Results, i: int) -> None:
        """Keep `other`'s result `i` as `other` holds it (its line copied, or its record)."""
        obj = other._objs[i]
        if obj is not None:
            self.append(obj)
        else:
            view = memoryview(other._buf)[other._starts[i] : other._ends[i]]
            self.add_line(view, other._status[i])

    def _line(self, i: int) -> bytes:
        return bytes(self._buf[self._starts[i] : self._ends[i]])

    def _get(self, i: int) -> CaseResult:
        obj = self._objs[i]
        if obj is None:
            obj = self._objs[i] = decode_as(self._line(i), CaseResult)
            self._starts[i] = -1  # the record holds it now (and may be changed)
        return obj

    @overload
    def __getitem__(self, i: int) -> CaseResult: ...
    @overload
    def __getitem__(self, i: slice) -> list[CaseResult]: ...
    def __getitem__(self, i: int | slice) -> CaseResult | list[CaseResult]:
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(len(self._objs)))]
        return self._get(range(len(self._objs))[i])

    @overload
    def __setitem__(self, i: int, value: CaseResult) -> None: ...
    @overload
    def __setitem__(self, i: slice, value: Iterable[CaseResult]) -> None: ...
    def __setitem__(self, i: int | slice, value: Any) -> None:
        if isinstance(i, slice):
            items = list(self)
            items[i] = value
            self._hold(items)
            return
        j = range(len(self._objs))[i]
        self._objs[j], self._status[j], self._starts[j] = value, value.status, -1

    def __delitem__(self, i: int | slice) -> None:
        del self._objs[i], self._status[i], self._starts[i], self._ends[i]

    def insert(self, index: int, value: CaseResult) -> None:
        self._objs.insert(index, value)
        self._status.insert(index, value.status)
        self._starts.insert(index, -1)
        self._ends.insert(index, -1)

    def _hold(self, items: list[CaseResult]) -> None:
        """Hold exactly `items` (records, as given)."""
        self._objs = list(items)
        self._status = [r.status for r in items]
        self._buf = bytearray()
        self._starts = array("q", [-1]) * len(items)
        self._ends = array("q", [-1]) * len(items)

    def __len__(self) -> int:
        return len(self._objs)

    def __iter__(self) -> Iterator[CaseResult]:
        for i in range(len(self._objs)):
            yield self._get(i)

    def rows(self) -> Iterator[InstanceRow]:
        """Every result's row; a line not yet read is decoded for it and not kept."""
        for i, obj in enumerate(self._objs):
            yield instance_row(decode_as(self._line(i), CaseResult) if obj is None else obj)

    def statuses(self) -> list[str]:
        """Every result's status, without decoding a line."""
        return [
            status if obj is None else obj.status
            for status, obj in zip(self._status, self._objs, strict=True)
        ]

    def lines(self) -> Iterator[bytes]:
        """Each result's encoded line (a record read and perhaps changed is encoded anew)."""
        for i, obj in enumerate(self._objs):
            yield self._line(i) if obj is None else encode(obj)

    def __encoded_items__(self) -> list[Any]:
        """What the encoder writes for this sequence: each line as it is (msgspec.Raw) or
        the record read from it."""
        return [
            msgspec.Raw(self._line(i)) if obj is None else obj for i, obj in enumerate(self._objs)
        ]

    def copy(self) -> list[CaseResult]:
        """The results as a plain list (as `list.copy`)."""
        return list(self)

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        """Sort in place, as `list.sort` (every result is read)."""
        self._hold(sorted(self, key=key, reverse=reverse))

    def __add__(self, other: Iterable[CaseResult]) -> list[CaseResult]:
        return [*self, *other]

    def __radd__(self, other: Iterable[CaseResult]) -> list[CaseResult]:
        return [*other, *self]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Results | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __repr__(self) -> str:
        return repr(list(self))
