"""A run's results: a list of `CaseResult` to its reader, held as encoded lines.

A finished instance is kept as its record's encoding (convlab.model.codec) and decoded the
first time it is read; the record is then kept, so it is the same object on every read and
a change to it sticks. The lines are appended to `Lines`, in chunks that are compressed once
full: the lines of one run are alike, so a chunk takes a fraction of its lines' size, and
reading a line back costs one chunk's decompression (the last chunk read is kept).

A line that was decoded when it was read from a file (a store or a save: every line is
checked as it is read) keeps the `InstanceRow` of its record, so `Run.df` and the summaries
of a run read back need no second decode; the record itself is not kept.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, MutableSequence
from typing import Any, TypeVar, overload

import msgspec

from convlab.model.codec import decode_as, encode
from convlab.model.records import CaseResult
from convlab.model.rows import InstanceRow, instance_row

__all__ = ["Lines", "Results"]

_T = TypeVar("_T")


class Lines:
    """Encoded lines, only ever appended, numbered from 0 in the order they came."""

    CHUNK = 128
    """Lines per chunk: a chunk is compressed when it has this many."""

    __slots__ = ("_ends", "_open", "_read", "_sealed")

    def __init__(self) -> None:
        self._sealed: list[bytes] = []
        """The full chunks, compressed."""
        self._open = bytearray()
        """The chunk being filled."""
        self._ends = array("q")
        """Where each line ends in its chunk."""
        self._read: tuple[int, bytes] = (-1, b"")
        """The last sealed chunk read: its number and its lines."""

    def add(self, line: bytes | memoryview) -> int:
        """Keep `line`; its number."""
        n = len(self._ends)
        self._open += line
        self._ends.append(len(self._open))
        if len(self._ends) % self.CHUNK == 0:
            self._sealed.append(zlib.compress(self._open, 1))
            self._open = bytearray()
        return n

    def __getitem__(self, n: int) -> bytes:
        chunk, k = divmod(n, self.CHUNK)
        start = self._ends[n - 1] if k else 0
        if chunk == len(self._sealed):
            return bytes(self._open[start : self._ends[n]])
        read = self._read
        if read[0] != chunk:
            read = self._read = (chunk, zlib.decompress(self._sealed[chunk]))
        return read[1][start : self._ends[n]]


class Results(MutableSequence[CaseResult]):
    """Case results kept as lines until read. It compares equal to the list of its results,
    pickles and deep-copies as that list, and encodes as it (its lines as they are)."""

    __slots__ = ("_lines", "_nos", "_objs", "_rows", "_status")

    def __init__(self, results: Iterable[CaseResult] = ()) -> None:
        self._lines = Lines()
        self._nos = array("q")
        """Each result's line number in `_lines`; -1: the result is held as a record."""
        self._status: list[str] = []
        self._objs: list[CaseResult | None] = []
        self._rows: list[InstanceRow | None] = []
        """The row of a line decoded when it was read (`add_read`), else None."""
        for r in results:
            self.append(r)

    def add_line(self, line: bytes | memoryview, status: str) -> None:
        """Keep a result as its encoded line (not decoded until read) and its status."""
        self._nos.append(self._lines.add(line))
        self._status.append(status)
        self._objs.append(None)
        self._rows.append(None)

    def add_read(self, line: bytes | memoryview, record: CaseResult) -> None:
        """Keep a result read back as its line, with the row of `record` (the line's decode,
        which is not kept): its frame needs no second decode."""
        self.add_line(line, record.status)
        self._rows[-1] = instance_row(record)

    def reordered(self, order: Iterable[int]) -> Results:
        """The results at the places `order` lists, in that order, sharing these lines
        (they are only ever appended to, so no line moves)."""
        out = Results()
        out._lines = self._lines
        for i in order:
            out._nos.append(self._nos[i])
            out._status.append(self._status[i])
            out._objs.append(self._objs[i])
            out._rows.append(self._rows[i])
        return out

    def _line(self, i: int) -> bytes:
        return self._lines[self._nos[i]]

    def _get(self, i: int) -> CaseResult:
        obj = self._objs[i]
        if obj is None:
            obj = self._objs[i] = decode_as(self._line(i), CaseResult)
            self._nos[i] = -1  # the record holds it now (and may be changed)
            self._rows[i] = None
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
        self._objs[j], self._status[j], self._nos[j] = value, value.status, -1
        self._rows[j] = None

    def __delitem__(self, i: int | slice) -> None:
        del self._objs[i], self._status[i], self._nos[i], self._rows[i]

    def insert(self, index: int, value: CaseResult) -> None:
        self._objs.insert(index, value)
        self._status.insert(index, value.status)
        self._nos.insert(index, -1)
        self._rows.insert(index, None)

    def _hold(self, items: list[CaseResult]) -> None:
        """Hold exactly `items` (records, as given)."""
        self._objs = list(items)
        self._status = [r.status for r in items]
        self._lines = Lines()
        self._nos = array("q", [-1]) * len(items)
        self._rows = [None] * len(items)

    def __len__(self) -> int:
        return len(self._objs)

    def __iter__(self) -> Iterator[CaseResult]:
        for i in range(len(self._objs)):
            yield self._get(i)

    def rows(self) -> list[InstanceRow]:
        """Every result's row: a record's (once read, it may have changed), the row kept with
        a line read back, else the row of the line decoded for it and not kept (such lines
        are read in the order they were kept, each chunk once)."""
        kept = list(zip(self._objs, self._rows, strict=True))
        missing = [i for i, (obj, row) in enumerate(kept) if obj is None and row is None]
        made = {
            i: instance_row(decode_as(self._line(i), CaseResult))
            for i in sorted(missing, key=self._nos.__getitem__)
        }
        return [
            instance_row(obj) if obj is not None else made[i] if row is None else row
            for i, (obj, row) in enumerate(kept)
        ]

    def mapped(self, fn: Callable[[CaseResult], _T]) -> list[_T]:
        """`fn` of every result, in order; a line not yet read is decoded for it and not
        kept (lines are read in the order they were kept, each chunk once)."""
        made: dict[int, _T] = {}
        for i in sorted(range(len(self._objs)), key=self._nos.__getitem__):
            obj = self._objs[i]
            made[i] = fn(decode_as(self._line(i), CaseResult) if obj is None else obj)
        return [made[i] for i in range(len(self._objs))]

    def each_row(self) -> Iterator[InstanceRow]:
        """Every result's row, in order, one at a time: a line read back gives the row it
        kept, another line not yet read is decoded for its row and neither is kept (a
        summary of a big run holds no second form of it). Safe beside a reader in another
        thread: the line number is read before the record (`_get` sets the record before it
        drops the number)."""
        for i in range(len(self._objs)):
            no = self._nos[i]
            row = self._rows[i] if no >= 0 else None  # a line read back keeps its row
            if row is not None:
                yield row
                continue
            record = self._objs[i] if no < 0 else decode_as(self._lines[no], CaseResult)
            assert record is not None  # no line number: the record holds the result
            yield instance_row(record)

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
