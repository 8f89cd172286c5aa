"""Yao `yao agent test` JSONL suites (seeds 002 and 004): one test case per JSON object.

Reading (CONFORMANCE 1.1, with the decisions table):
- each non-blank line not starting with `//` is one JSON object; pretty-printed objects
  spanning several lines, as the seed documents print them, are accepted too
  (`convlab.formats._jsonl_scan`);
- every problem of every line is collected into one SuiteError, each at the line where its
  object starts, with a field path (`assert[1].value`, `input[0].content[1].source`);
- a case id used twice is a problem naming both lines; a file with no case is
  `no test cases found`.
Cases: `convlab.formats._jsonl_case`; assertions: `convlab.formats._jsonl_assert`
(`parse_jsonl_assertion`, also used by `convlab.check()` for dicts written with `type`).

Suite id = the file stem; `Case.source` = file:line of the object's first line.
"""

from __future__ import annotations

import re
from pathlib import Path

from convlab.formats._base import Problems, gc_paused, register_format, with_cases
from convlab.formats._jsonl_assert import parse_jsonl_assertion
from convlab.formats._jsonl_case import CaseReader
from convlab.formats._jsonl_scan import scan
from convlab.model.suite import Case, Source, Suite

__all__ = ["load", "load_jsonl", "parse_jsonl_assertion", "sniff"]

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


@register_format("jsonl", (".jsonl",), sniff)
def load_jsonl(path: Path, text: str) -> Suite:
    """Read a Yao JSONL file into a Suite, or raise SuiteError with every problem."""
    problems = Problems(str(path))
    with gc_paused():  # 3-4x faster on 100,000 lines: the objects built have no cycles
        reader = CaseReader(problems, path)
        cases: list[Case] = []
        first_line: dict[str, int] = {}
        found = 0
        for chunk in scan(text, problems):
            found += 1
            case_id = chunk.value.get("id")
            if isinstance(case_id, str) and case_id:
                seen = first_line.setdefault(case_id, chunk.line)
                if seen != chunk.line:
                    problems.add(chunk.line, "id", f"duplicate id {case_id!r}: also on line {seen}")
            case = reader.read(chunk.value, chunk.line)
            if case is not None:
                cases.append(case)
        if not found and not problems:
            problems.add(None, "", "no test cases found")
        if problems:
            problems.items.sort(key=lambda p: p.line or 0)
            problems.raise_if_any()
    return with_cases(Suite(id=path.stem, sources=[Source(file=str(path), format="jsonl")]), cases)


load = load_jsonl
"""The format's loader under its generic name: `load(path, text) -> Suite`."""
