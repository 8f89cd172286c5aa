"""Splitting a JSONL file into JSON objects, each with the line it starts on.

Yao reads one JSON object per non-blank line and skips lines starting with `//`. Yao's
documents print the same cases pretty-printed over many lines, with `//` comments, so this
scanner also accepts an object that spans lines: from a line starting with `{` it adds lines
until the brackets balance (brackets inside strings do not count), then parses the whole.

A syntax error never hides the errors after it:
- an object whose brackets balance but does not parse is reported, and reading goes on after
  its last line;
- an object that is never closed is reported, and reading goes on at the next line in
  "recovery": the first later object that parses and is not a fragment of the broken one
  (followed by `,`, `]` or `}`) is read again as a case; fragments are skipped silently;
- consecutive lines that are not part of any object are one problem (at the first of them).

Text that is not Unicode (a lone surrogate, which only a `\\ud800`-`\\udfff` escape can put
in JSON) is a problem at the object's first line with its field path, and is mended
(`convlab.formats._unicode.mend`) so the case's other problems are still found; only an object
whose text holds such an escape, not paired (`lone_json_escape`), is looked at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from convlab._readable import json_type
from convlab.formats._base import Problems, dotted
from convlab.formats._unicode import Loc, lone_json_escape, mend

__all__ = ["Chunk", "decode", "scan"]

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_CONTINUES = ("{", "[", ",", ":")
"""A start line ending with one of these means the object was meant to span lines."""
_FRAGMENT_NEXT = (",", "]", "}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
decode = _DECODER.decode
"""Strict JSON (no NaN/Infinity, like Go's encoding/json)."""
_raw_decode = _DECODER.raw_decode


class Chunk(NamedTuple):
    """One JSON object of the file, the 1-based line where it starts and the one it ends on."""

    line: int
    value: dict[str, Any]
    last: int


def _depth(line: str) -> int:
    """Net bracket depth change of one line, ignoring brackets inside strings."""
    bare = _STRING.sub("", line)
    quote = bare.find('"')
    if quote >= 0:  # an unterminated string runs to the end of the line
        bare = bare[:quote]
    return bare.count("{") + bare.count("[") - bare.count("}") - bare.count("]")


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("//")


def _error_text(exc: BaseException, first_line: int | None = None) -> str:
    """`invalid JSON: <cause> (line L, column C)`; the line only for multi-line objects."""
    if isinstance(exc, RecursionError):
        return "invalid JSON: nested too deeply"
    if not isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc}"
    if first_line is None:
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    return f"invalid JSON: {exc.msg} (line {first_line + exc.lineno - 1}, column {exc.colno})"


@dataclass
class _Scanner:
    lines: Sequence[str]
    problems: Problems
    chunks: list[Chunk] = field(default_factory=list)
    """The object just read (at most one, taken by `run` at once)."""
    recovering: bool = False
    stray: tuple[int, int, str] | None = None
    """(first index, last index, message) of the current run of lines outside any object."""
    closes: list[int] | None = None
    """For each line index, where an object starting there closes (-1: never); lazy."""
    escapes: bool = True
    """Whether any object may hold a surrogate escape (False: none is looked for)."""

    def run(self) -> Iterator[Chunk]:
        i, n, chunks, escapes = 0, len(self.lines), self.chunks, self.escapes
        while i < n:
            text = self.lines[i].strip()
            if not text or text.startswith("//"):
                i += 1
            elif text[0] != "{":
                self._stray(i, text)
                i += 1
            else:
                if self.stray is not None:
                    self._flush_stray()
                if not self.recovering:  # the common case, fast: one object on one line
                    try:
                        value, end = _raw_decode(text)
                    except (ValueError, RecursionError):
                        end = -1
                    if end == len(text):
                        i += 1
                        if escapes and lone_json_escape(text):
                            self._mend(value, i)
                        yield Chunk(i, value, i)
                        continue
                i = self._candidate(i, text)
                if chunks:  # hand each object over at once: the file's objects are never all held
                    yield chunks.pop()
        self._flush_stray()

    def _stray(self, i: int, text: str) -> None:
        if self.recovering:
            return
        if self.stray is not None:
            self.stray = (self.stray[0], i, self.stray[2])
            return
        try:
            value = decode(text)
        except (ValueError, RecursionError) as exc:
            message = _error_text(exc)
        else:
            message = f"each line must be a JSON object, got {json_type(value)}"
        self.stray = (i, i, message)

    def _flush_stray(self) -> None:
        if self.stray is None:
            return
        first, last, message = self.stray
        if last > first:
            message += f" (lines {first + 1}-{last + 1} are not part of any JSON object)"
        self.problems.add(first + 1, "", message)
        self.stray = None

    def _candidate(self, i: int, text: str) -> int:
        """Read the object starting at line index i; return the index to continue at."""
        try:
            value = decode(text)
        except (ValueError, RecursionError) as exc:
            return self._multi(i, text, exc)
        return self._accept(i, i, value, text)

    def _multi(self, i: int, text: str, first_exc: BaseException) -> int:
        j = self._closing_line(i)
        if j < 0:  # never closed: report, then look for the next whole object
            if not self.recovering:
                self.problems.add(i + 1, "", self._unclosed(text, first_exc))
                self.recovering = True
            return i + 1
        if j > i:
            # comment lines inside a pretty-printed object become blank (line numbers kept)
            parts = ["" if _is_comment(line) else line for line in self.lines[i : j + 1]]
            joined = "\n".join(parts)
            try:
                return self._accept(i, j, decode(joined), joined)
            except (ValueError, RecursionError) as exc:
                first_exc, at = exc, i + 1
        else:
            at = None
        if not self.recovering:
            self.problems.add(i + 1, "", _error_text(first_exc, at))
        return j + 1

    def _closing_line(self, i: int) -> int:
        """The line index where brackets opened from line i balance again, or -1.

        Computed for all lines at once on first use (a "next smaller or equal" pass over the
        running depth), so a file of many unclosed lines is still read in linear time.
        """
        if self.closes is None:
            running = [0]
            for line in self.lines:
                running.append(running[-1] + (0 if _is_comment(line) else _depth(line)))
            closes = [-1] * len(self.lines)
            stack: list[int] = []  # indices of `running`, their values increasing
            for k in range(len(running) - 1, -1, -1):
                while stack and running[stack[-1]] > running[k]:
                    stack.pop()
                if k < len(self.lines) and stack:
                    closes[k] = stack[-1] - 1
                stack.append(k)
            self.closes = closes
        return self.closes[i]

    @staticmethod
    def _unclosed(text: str, exc: BaseException) -> str:
        if text.endswith(_CONTINUES):
            return "invalid JSON: the object starting on this line is never closed"
        return _error_text(exc)

    def _accept(self, i: int, end: int, value: Any, text: str) -> int:
        if self.recovering and self._is_fragment(end):
            return end + 1
        self.recovering = False
        if self.escapes and lone_json_escape(text):
            self._mend(value, i + 1)
        self.chunks.append(Chunk(i + 1, value, end + 1))
        return end + 1

    def _mend(self, value: dict[str, Any], line: int) -> None:
        """Report (at `line`) and mend, in place, the object's text that is not Unicode."""

        def report(loc: Loc, message: str) -> None:
            self.problems.add(line, dotted(loc), message)

        mend(value, report, "JSON")

    def _is_fragment(self, end: int) -> bool:
        """Is the object ending at line index `end` followed by `,`, `]` or `}`?"""
        for j in range(end + 1, len(self.lines)):
            text = self.lines[j].strip()
            if text and not text.startswith("//"):
                return text.startswith(_FRAGMENT_NEXT)
        return False


def scan(lines: Sequence[str], problems: Problems, *, escapes: bool = True) -> Iterator[Chunk]:
    """Every JSON object of a JSONL file's lines (`text.split("\\n")`, or `Lines` read on
    demand), single-line or pretty-printed, in file order.

    Syntax problems, and text that is not Unicode, are added to `problems` as the scan passes
    them. `escapes=False` says the file holds no surrogate escape (`\\ud800`-`\\udfff`), so
    no object is searched for one.
    """
    return _Scanner(lines, problems, escapes=escapes).run()
