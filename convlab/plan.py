"""Plan: Suite x variants (Cartesian product) x repetitions x runs -> keyed case instances.

Each instance is keyed by (case id, variant ids, repetition, run index); the key is how
the results store recognises work already done when a run resumes.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from convlab.errors import SelectionError
from convlab.model._trusted import dumped_json
from convlab.model.results import variant_label
from convlab.model.suite import Case, Selection, Suite, Turn

__all__ = ["Instance", "SelectionError", "expand", "fingerprint", "resolve_selection", "suite_text"]


@dataclass(frozen=True, init=False)
class Instance:
    """One concrete conversation to run."""

    case: Case
    variant: dict[str, str]
    repetition: int
    run: int
    turns: tuple[Turn, ...]
    """The case's turns with each variant's input applied (a variant replaces the input)."""
    blocked: str | None
    """Why the instance may not start (e.g. external writes not allowed)."""

    key: tuple[str, str, int, int] = field(init=False, repr=False, compare=False)
    """(case id, `step=variant,...`, repetition, run index)."""
    label: str = field(init=False, repr=False, compare=False)
    """A readable, unique name for the instance (also used as its thread id)."""

    def __init__(
        self,
        case: Case,
        variant: dict[str, str] | None = None,
        repetition: int = 0,
        run: int = 0,
        turns: tuple[Turn, ...] = (),
        blocked: str | None = None,
    ) -> None:
        # the fields in one call (a frozen dataclass's own __init__ sets each through
        # object.__setattr__: 3.4 us an instance, a run plans one per case); the key and
        # label are made once here: every instance reads both
        variant = {} if variant is None else variant
        label = variant_label(variant)
        key = (case.id, label, repetition, run)
        parts = [case.id, label] if label else [case.id]
        if case.repetitions > 1:
            parts.append(f"rep={repetition}")
        self.__dict__.update(
            case=case,
            variant=variant,
            repetition=repetition,
            run=run,
            turns=turns,
            blocked=blocked,
            key=key,
            label=" ".join(parts) + (f" #{run}" if run else ""),
        )


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
    return suite_text(suite).fingerprint


@dataclass(frozen=True)
class SuiteText:
    """A suite's fingerprint and its JSON as a store's header holds it, from one dump."""

    fingerprint: str
    json: str
    """`suite.model_dump_json()` but for the order of keys: `source` ends each case."""


_NO_SOURCE = frozenset({"source"})
_NULL_SOURCE = ',"source":null}'
"""How a case read from no file ends (every case of a suite built in Python)."""


def suite_text(suite: Suite) -> SuiteText:
    """The fingerprint and the header's JSON of `suite`, each case dumped once.

    Where the suite was read from (paths, lines) does not change what it asks: the text
    hashed is exactly `suite.model_dump_json(exclude={"sources": True, "cases": {"__all__":
    {"source"}}})`, put together from per-case dumps. A case's `source` is its last field, so
    its dump is the header's text, and that dump without its source at the end is the
    hashed one: pydantic's per-item exclude cost a case 60% more than its whole dump, and
    dumping the suite a second time cost a 10,000-case run with a store 0.4-0.8 s.
    """
    head = suite.model_dump_json(exclude={"sources", "cases", "assertions"})[:-1]
    placed = []
    cases = []
    for case in suite.cases:  # a big JSONL suite reads its cases on demand: once
        whole, source = dumped_json(case), case.source
        end = _NULL_SOURCE if source is None else f',"source":{dumped_json(source)}}}'
        if whole.endswith(end):
            cases.append(whole[: -len(end)] + "}")
        else:  # a source dumped otherwise inside its case (never seen): dump it apart
            cases.append(dumped_json(case, exclude=_NO_SOURCE))
            whole = cases[-1][:-1] + end
        placed.append(whole)
    checks = suite.model_dump_json(include={"assertions"})[len('{"assertions":') : -1]
    body = f'{head},"cases":[{",".join(cases)}],"assertions":{checks}}}'
    sources = suite.model_dump_json(include={"sources"})[len('{"sources":') : -1]
    full = f'{head},"cases":[{",".join(placed)}],"assertions":{checks},"sources":{sources}}}'
    return SuiteText(hashlib.sha256(body.encode()).hexdigest()[:16], full)


def resolve_selection(selection: Selection, interaction: dict[str, Any] | None) -> dict[str, Any]:
    """The option a selection picks from the previous turn's interaction (seed 001 rules)."""
    return selection.pick(interaction)
