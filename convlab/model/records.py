"""Lean result records: how a run keeps 100,000 finished instances at under 1 KB each.

A finished instance is kept as its line (the compact JSON the results store writes,
convlab.model._codec) and its status. The `CaseResult` pydantic model, about eight model
objects and 6 KB, is built from the line the first time someone reads it (`run.results[i]`)
and kept from then on, so it is the same object on every read and a change to it sticks.
`Run.df`, `stability()` and `summary` read each line's row (the `Run.df` values, from hints
the line carries) and never build a model; `repr(run)` reads only the statuses.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, MutableSequence
from typing import TYPE_CHECKING, Any, Literal, get_args, overload

if TYPE_CHECKING:
    from convlab.model.conversation import Usage
    from convlab.model.results import AssertionResult, CaseResult, TurnResult

__all__ = [
    "KEY",
    "ROW_FIELDS",
    "Results",
    "Row",
    "Status",
    "instance_row",
    "row_counts",
    "usage_tokens",
    "why_not_passed",
]

Row = tuple[Any, ...]
"""One instance's `Run.df` values, in ROW_FIELDS order."""

Status = Literal["passed", "failed", "error", "skipped", "timeout", "cancelled", "blocked"]
"""A case instance's status (`CaseResult.status`)."""

_STATUS = {s: s for s in get_args(Status)}
"""One string object per status, shared by every result that has it."""

ROW_FIELDS = (
    "case_id",
    "variant",
    "repetition",
    "run",
    "status",
    "reward",
    "duration_ms",
    "turns",
    "error",
    "code",
    "blame",
    "assertions",
    "assertions_failed",
    "checkpoints",
    "checkpoints_reached",
    "tool_calls",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "started_at",
    "finish_reason",
)
KEY = slice(0, 4)
"""The instance key's place in a row: (case id, variant label, repetition, run index)."""


def _all_assertions(r: CaseResult) -> Iterator[AssertionResult]:
    """Top-level assertion results of an instance: each turn's, then the case's."""
    for t in r.turns:
        yield from t.assertions
    yield from r.assertions


def _assertion_reason(a: AssertionResult) -> str:
    """Why one assertion did not pass, in one line."""
    if a.error:
        return a.error
    if a.message:
        return a.message
    for child in a.children:
        if not child.passed and child.status != "skipped":
            return _assertion_reason(child)
    name = a.label or a.id or a.kind
    return f"{name} failed: expected {a.expected!r}, got {a.actual!r}"


def why_not_passed(r: CaseResult) -> str:
    """The error, or the first failed assertion's message (then checkpoint, turn); '' if passed."""
    if r.status == "passed":
        return ""
    if r.error:
        return r.error
    for a in _all_assertions(r):
        if a.status in ("failed", "error"):
            return _assertion_reason(a)
    for cp in r.checkpoints:
        if cp.required and not cp.passed:
            return cp.message or f"checkpoint {cp.id} not reached"
    for t in r.turns:
        if t.error:
            return t.error
    return r.finish_reason or r.status


def _n_calls(t: TurnResult) -> int:
    return len(t.observation.tool_calls) if t.observation else 0


def usage_tokens(r: CaseResult) -> tuple[int, int, int]:
    """Token usage of an instance: its own record, else the sum over its turns."""
    return tokens_of(r.usage, r.turns)


def tokens_of(usage: Usage | None, turns: list[TurnResult]) -> tuple[int, int, int]:
    """`usage_tokens` of a result's `usage` and `turns`."""
    if usage is not None:
        return (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    used = [t.observation.usage for t in turns if t.observation and t.observation.usage]
    if not used:
        return (0, 0, 0)
    return (
        sum(u.prompt_tokens for u in used),
        sum(u.completion_tokens for u in used),
        sum(u.total_tokens for u in used),
    )


def instance_row(r: CaseResult) -> Row:
    """The `Run.df` row of one result (ROW_FIELDS order)."""
    return (
        *r.key,
        r.status,
        r.reward,
        r.duration_ms,
        len(r.turns),
        why_not_passed(r),
        r.code or "",  # as `error`: empty when there is none
        r.blame,
        *_counts(r),
        r.attempts,
        *usage_tokens(r),
        r.started_at,
        r.finish_reason,
    )


def row_counts(r: CaseResult) -> tuple[int, ...]:
    """What a result's row counts (ROW_FIELDS' assertions to tool calls, then the tokens):
    what the row holds that its line does not say at once (a line's `_r` hint)."""
    return (*_counts(r), *usage_tokens(r))


def _counts(r: CaseResult) -> tuple[int, int, int, int, int]:
    every = list(_all_assertions(r))
    return (
        len(every),
        sum(a.status in ("failed", "error") for a in every),
        len(r.checkpoints),
        sum(cp.reached for cp in r.checkpoints),
        sum(_n_calls(t) for t in r.turns),
    )


class Results(MutableSequence["CaseResult"]):
    """`Run.results` of a run the engine made or a store read back: a list of CaseResult
    to its reader, kept as rows and compact lines until an item is read.

    It compares equal to the list of its results, pickles and deep-copies as that list, and
    pydantic dumps it as one (`Run`'s serializer).

    The lines are kept end to end in one buffer, not as a bytes object each: a line under
    512 bytes is Python's small-object allocator's, whose arenas the run's short-lived
    objects share and keep resident (measured: 1,146 B per 464-byte line held that way,
    about 500 B in the buffer). A result read as a model leaves its line in the buffer,
    unused: the model costs ten times more.
    """

    __slots__ = ("_buf", "_ends", "_objs", "_starts", "_status")

    def __init__(self, results: Iterable[CaseResult] = ()) -> None:
        self._status: list[str | None] = []
        self._buf = bytearray()
        self._starts = array("q")
        """Where each result's line starts in `_buf`; -1: the result is held as a model."""
        self._ends = array("q")
        self._objs: list[CaseResult | None] = []
        for r in results:
            self.append(r)

    def add(self, status: str, *line: bytes | memoryview) -> None:
        """Keep a finished instance as its status and encoded line, given whole or in pieces
        (a store read back: `{` and a view of the line's body in the file, never copied in
        between). No model is built; its row is read from the line when asked: a row held
        per result would cost half as much as the line."""
        self._status.append(_STATUS.get(status, status))
        buf = self._buf
        self._starts.append(len(buf))
        for piece in line:
            buf += piece
        self._ends.append(len(buf))
        self._objs.append(None)

    def add_from(self, other: Results, i: int) -> None:
        """Keep `other`'s result `i` as `other` holds it (its line copied, or its model)."""
        start = other._starts[i]
        if start < 0:
            obj = other._objs[i]
            assert obj is not None
            self.append(obj)
            return
        status = other._status[i]
        assert status is not None
        self.add(status, memoryview(other._buf)[start : other._ends[i]])

    def _line(self, i: int) -> bytes | None:
        start = self._starts[i]
        return None if start < 0 else bytes(self._buf[start : self._ends[i]])

    def _get(self, i: int) -> CaseResult:
        obj = self._objs[i]
        if obj is None:
            from convlab.model._codec import decode

            line = self._line(i)
            assert line is not None
            obj = self._objs[i] = decode(line)
            self._starts[i] = -1  # the model holds it now (and may be changed)
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
            self.clear_to(items)
            return
        j = range(len(self._objs))[i]
        self._objs[j], self._status[j], self._starts[j] = value, None, -1

    def __delitem__(self, i: int | slice) -> None:
        del self._objs[i], self._status[i], self._starts[i], self._ends[i]

    def insert(self, index: int, value: CaseResult) -> None:
        self._objs.insert(index, value)
        self._status.insert(index, None)
        self._starts.insert(index, -1)
        self._ends.insert(index, -1)

    def clear_to(self, items: list[CaseResult]) -> None:
        """Hold exactly `items` (models, as given)."""
        self._objs = list(items)
        self._status = [None] * len(items)
        self._buf = bytearray()
        self._starts = array("q", [-1]) * len(items)
        self._ends = array("q", [-1]) * len(items)

    def __len__(self) -> int:
        return len(self._objs)

    def __iter__(self) -> Iterator[CaseResult]:
        for i in range(len(self._objs)):
            yield self._get(i)

    def rows(self) -> list[Row]:
        """Every result's `Run.df` row: from its line, or from its model once it was read
        (it may have been changed)."""
        from convlab.model._codec import loads, row_of_line

        out: list[Row] = []
        for i, obj in enumerate(self._objs):
            if obj is None:
                line = self._line(i)
                assert line is not None
                out.append(row_of_line(loads(line), line))
            else:
                out.append(instance_row(obj))
        return out

    def statuses(self) -> list[str]:
        """Every result's status (no line is read)."""
        return [
            obj.status if obj is not None else status  # type: ignore[misc]
            for status, obj in zip(self._status, self._objs, strict=True)
        ]

    def lines(self) -> Iterator[bytes | None]:
        """Each result's encoded line, None for one held as a model."""
        return (self._line(i) for i in range(len(self._objs)))

    def __add__(self, other: Iterable[CaseResult]) -> list[CaseResult]:
        return [*self, *other]

    def __radd__(self, other: Iterable[CaseResult]) -> list[CaseResult]:
        return [*other, *self]

    def copy(self) -> list[CaseResult]:
        """The results as a plain list (as `list.copy`)."""
        return list(self)

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        """Sort in place, as `list.sort` (every result is read as a model)."""
        self.clear_to(sorted(self, key=key, reverse=reverse))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Results | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __repr__(self) -> str:
        return repr(list(self))
