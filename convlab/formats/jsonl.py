"""Yao `yao agent test` JSONL suites: one test case per JSON object.

Reading (Yao's `JSONLLoader.LoadFile`, with the decisions of docs/yao.md):
- each non-blank line not starting with `//` is one JSON object; pretty-printed objects
  spanning several lines, as Yao's documents print them, are accepted too
  (`convlab.formats._jsonl_scan`);
- every problem of every line is collected into one SuiteError, each at the line where its
  object starts, with a field path (`assert[1].value`, `input[0].content[1].source`);
- a case id used twice is a problem naming both lines; a file with no case is
  `no test cases found`;
- text that is not Unicode (a lone surrogate, from a `\\udcff` escape) is a problem at its
  field path (`convlab.formats._unicode`).
Cases: `convlab.formats._jsonl_case`; assertions: `convlab.formats._jsonl_assert`
(`parse_jsonl_assertion`, also used by `convlab.check()` for dicts written with `type`).

Suite id = the file stem; `Case.source` = file:line of the object's first line.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from convlab.errors import SuiteError
from convlab.formats._base import Problems, gc_paused, register_format, with_cases
from convlab.formats._jsonl_assert import parse_jsonl_assertion
from convlab.formats._jsonl_case import CaseReader
from convlab.formats._jsonl_lines import LazyCases, Lines
from convlab.formats._jsonl_scan import Chunk, decode, scan
from convlab.formats._unicode import JSON_ESCAPE_BYTES
from convlab.model.suite import Case, Source, Suite

__all__ = ["LAZY_BYTES", "load", "load_jsonl", "parse_jsonl_assertion", "read_jsonl", "sniff"]

_RECORD_TYPES = ("header", "start", "result", "stability", "summary")
"""Top-level `type` values of result streams (convlab's store, Yao's JSONL reporter)."""


_STREAM = re.compile(
    r'\s*(?://[^\n]*\n\s*)*\{\s*"type"\s*:\s*"(?:' + "|".join(sorted(_RECORD_TYPES)) + ')"'
)
"""A result stream (convlab's store, saved runs, Yao's report) starts with a typed record."""


def sniff(path: Path, text: str) -> bool:
    """Claim every `.jsonl` file except result streams (read from the start of the text: a
    store's header line can be far longer than any prefix worth decoding)."""
    return _STREAM.match(text) is None


LAZY_BYTES = 16_000_000
"""A file at least this big keeps its cases as a `LazyCases` (built from the file's bytes when
read) rather than a list: its Case objects would take many times the file's size."""


def load_jsonl(path: Path, text: str) -> Suite:
    """Read a Yao JSONL text into a Suite, or raise SuiteError with every problem."""
    return read_jsonl(path, text.encode("utf-8", "surrogatepass"))


def read_jsonl(path: Path, data: bytes) -> Suite:
    """Read a Yao JSONL file's bytes into a Suite, or raise SuiteError with every problem.

    The bytes are the only copy of the file (lines are decoded one at a time), and a file of
    LAZY_BYTES or more keeps its cases as lines, each built into a Case when read.
    """
    problems = Problems(str(path))
    lines = Lines(data, problems)
    lazy = len(data) >= LAZY_BYTES
    with gc_paused():  # the objects built have no cycles: nothing for the collector to find
        reader = CaseReader(problems, path)
        cases: list[Case] = []
        firsts, lasts = array("i"), array("i")
        ids = _Ids()
        found = 0
        escapes = JSON_ESCAPE_BYTES.search(data) is not None  # else no line is searched
        for chunk in scan(lines, problems, escapes=escapes):
            found += 1
            case_id = chunk.value.get("id")
            if isinstance(case_id, str) and case_id:
                ids.add(case_id, chunk)
            case = reader.read(chunk.value, chunk.line)
            if case is None:
                continue
            if lazy:  # checked, then let go: built again from its lines when read
                firsts.append(chunk.line)
                lasts.append(chunk.last)
            else:
                cases.append(case)
        ids.check(lines, problems)
        if not found and not problems:
            problems.add(None, "", "no test cases found")
        if problems:
            problems.items.sort(key=lambda p: p.line or 0)
            problems.raise_if_any()
    held = LazyCases(lines, firsts, lasts, _Build(str(path))) if lazy else cases
    return with_cases(Suite(id=path.stem, sources=[Source(file=str(path), format="jsonl")]), held)


class _Ids:
    """Case ids seen, to report one used twice: the id's hash and its lines per case (24 bytes,
    where a dict of the ids took ~140 bytes a case); equal hashes are compared by their ids."""

    def __init__(self) -> None:
        self.hashes, self.firsts, self.lasts = array("q"), array("i"), array("i")

    def add(self, case_id: str, chunk: Chunk) -> None:
        self.hashes.append(hash(case_id))
        self.firsts.append(chunk.line)
        self.lasts.append(chunk.last)

    def check(self, lines: Lines, problems: Problems) -> None:
        """Add `duplicate id` at every line that repeats an earlier line's id."""
        if len(self.hashes) < 2:
            return
        hashes = np.frombuffer(self.hashes, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")  # equal hashes stay in line order
        ordered = hashes[order]
        repeats = np.flatnonzero(ordered[1:] == ordered[:-1])
        seen: dict[str, int] = {}
        for k in np.unique(np.concatenate([repeats, repeats + 1])):
            n = int(order[k])
            first = self.firsts[n]
            case_id = decode(lines.text(first, self.lasts[n]))["id"]
            line = seen.setdefault(case_id, first)
            if line != first:
                problems.add(first, "id", f"duplicate id {case_id!r}: also on line {line}")


@dataclass
class _Build:
    """Builds one case again from its lines (for LazyCases); pickles as the file's name."""

    file: str
    reader: CaseReader | None = field(default=None, repr=False, compare=False)

    def __call__(self, text: str, line: int) -> Case:
        if self.reader is None:
            self.reader = CaseReader(Problems(self.file), Path(self.file))
        self.reader.problems.items.clear()
        case = self.reader.read(decode(text), line)
        if case is None:  # valid at load; since then, e.g., an attached file was removed
            raise SuiteError(list(self.reader.problems.items))
        return case

    def __getstate__(self) -> dict[str, Any]:
        return {"file": self.file, "reader": None}


register_format("jsonl", (".jsonl",), sniff, read_jsonl)(load_jsonl)
load = load_jsonl
"""The format's loader under its generic name: `load(path, text) -> Suite`."""
