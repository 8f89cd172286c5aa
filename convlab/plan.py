"""Plan: Suite x variants (Cartesian product) x repetitions x runs -> keyed case instances.

Each instance is keyed by (case id, variant ids, repetition, run index); the key is how
the results store recognises work already done when a run resumes.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from convlab.errors import SelectionError
from convlab.model.records import variant_label
from convlab.model.suite import Case, Selection, Suite, Turn

__all__ = [
    "Instance",
    "SelectionError",
    "expand",
    "fingerprint",
    "resolve_selection",
    "write_suite",
]


@dataclass(frozen=True)
class Instance:
    """One concrete conversation to run."""

    case: Case
    variant: dict[str, str] = field(default_factory=dict)
    repetition: int = 0
    run: int = 0
    turns: tuple[Turn, ...] = ()
    """The case's turns with each variant's input applied (a variant replaces the input)."""
    blocked: str | None = None
    """Why the instance may not start (e.g. external writes not allowed)."""

    @functools.cached_property
    def key(self) -> tuple[str, str, int, int]:
        """(case id, `step=variant,...`, repetition, run index)."""
        return (self.case.id, variant_label(self.variant), self.repetition, self.run)

    @functools.cached_property
    def label(self) -> str:
        """A readable, unique name for the instance (also used as its thread id)."""
        parts = [self.case.id, self.key[1]] if self.key[1] else [self.case.id]
        if self.case.repetitions > 1:
            parts.append(f"rep={self.repetition}")
        return " ".join(parts) + (f" #{self.run}" if self.run else "")


def _combinations(case: Case) -> Iterator[tuple[dict[str, str], tuple[Turn, ...]]]:
    """Every variant combination of a case with variants (step order), the inputs replaced."""
    slots = [
        [(t.id or str(i), v) for v in t.variants] if t.variants else [None]
        for i, t in enumerate(case.turns)
    ]
    for combo in itertools.product(*slots):
        chosen: dict[str, str] = {}
        turns = []
        for turn, pick in zip(case.turns, combo, strict=True):
            if pick is None:
                turns.append(turn)
            else:
                chosen[pick[0]] = pick[1].id
                turns.append(turn.model_copy(update={"input": pick[1].input, "variants": []}))
        yield chosen, tuple(turns)


def expand(suite: Suite, runs: int = 1, allow_external_writes: bool = False) -> Iterator[Instance]:
    """Yield every instance, run by run (so run 0 of every case comes first)."""
    for run in range(runs):
        for case in suite.cases:
            blocked = None
            if case.write_policy == "external" and not allow_external_writes:
                blocked = (
                    "EXTERNAL_WRITES_NOT_AUTHORIZED: this case may change external records; "
                    "pass allow_external_writes=True to run it"
                )
            turns = case.turns
            if any(t.variants for t in turns):
                for variant, chosen in _combinations(case):
                    for rep in range(case.repetitions):
                        yield Instance(case, variant, rep, run, chosen, blocked)
                continue
            whole = tuple(turns)  # most cases: the one combination there is
            for rep in range(case.repetitions):
                yield Instance(case, {}, rep, run, whole, blocked)


def count(suite: Suite, runs: int = 1) -> int:
    """How many instances `expand` yields, without building them."""
    total = 0
    for case in suite.cases:
        combos = 1
        for t in case.turns:
            combos *= max(1, len(t.variants))
        total += combos * case.repetitions
    return total * runs


def fingerprint(suite: Suite) -> str:
    """A hash of the suite's definition (cases and assertions, not where it was read from)."""
    return write_suite(suite, None)


def write_suite(suite: Suite, write: Callable[[bytes], object] | None) -> str:
    """Write `suite`'s JSON through `write` a case at a time (never the whole suite's text at
    once), and give back its fingerprint; `write=None` only hashes.

    What is hashed is the suite's JSON without where it was read from (its `sources`, and
    each case's `source`): exactly `suite.model_dump_json(exclude={"sources": True, "cases":
    {"__all__": {"source"}}})`. A case's `source` is its last field, so one dump of a case
    gives both the text written and, cut before its source, the text hashed.
    """
    sha = hashlib.sha256()
    head = suite.model_dump_json(exclude={"sources", "cases", "assertions"})[:-1]
    start = f'{head},"cases":['.encode()
    sha.update(start)
    if write is not None:
        write(start)
    for n, case in enumerate(suite.cases):  # a big JSONL suite reads its cases on demand
        whole = case.model_dump_json()
        source = case.source
        end = _NULL_SOURCE if source is None else f',"source":{source.model_dump_json()}}}'
        if whole.endswith(end):
            bare = whole[: -len(end)] + "}"
        else:  # a source dumped otherwise inside its case (never seen): dump it apart
            bare = case.model_dump_json(exclude=_NO_SOURCE)
            whole = bare[:-1] + end
        comma = "," if n else ""
        sha.update(f"{comma}{bare}".encode())
        if write is not None:
            write(f"{comma}{whole}".encode())
    checks = suite.model_dump_json(include={"assertions"})[len('{"assertions":') : -1]
    tail = f'],"assertions":{checks}'
    sha.update(f"{tail}}}".encode())
    if write is not None:
        sources = suite.model_dump_json(include={"sources"})[len('{"sources":') : -1]
        write(f'{tail},"sources":{sources}}}'.encode())
    return sha.hexdigest()[:16]


_NO_SOURCE = {"source"}
_NULL_SOURCE = ',"source":null}'
"""How a case read from no file ends (every case of a suite built in Python)."""


def resolve_selection(selection: Selection, interaction: dict[str, Any] | None) -> dict[str, Any]:
    """The option a selection picks from the previous turn's interaction (as
    intention-kernel picks it)."""
    return selection.pick(interaction)
