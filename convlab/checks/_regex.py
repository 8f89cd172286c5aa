"""Regex checks with a time limit: a suite's pattern must not stop the run.

A check runs on the engine's event loop, so a pattern that backtracks catastrophically
(`(a|aa)+$` against forty `a`s and a `!`) would block every case in flight, and no case
timeout could fire while it runs. Python's `re` cannot be stopped; the `regex` package can
(`timeout=`), so the checks search with it. The pattern is compiled by `re` first: a pattern
`re` refuses is an error exactly as before, and one that only `re` reads (none is known)
is searched by `re`, without a limit.

A search that runs past `REGEX_TIMEOUT_S` raises `RegexTimeoutError`, which the checks' runner
turns into an `error` result blamed on `suite`: the pattern is the suite's.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from typing import Any

import regex

from convlab.errors import RegexTimeoutError

__all__ = ["REGEX_TIMEOUT_S", "RegexTimeoutError", "compiled", "fullmatch", "search"]

REGEX_TIMEOUT_S = 1.0
"""The longest one regex search of a check may take; longer is an error of the suite's."""

_TIMED_OUT: OrderedDict[tuple[str, str, str], RegexTimeoutError] = OrderedDict()
"""The latest searches that ran out of time: the same search is not run again (a check
that raised may be evaluated twice)."""


class _Pattern:
    """A pattern compiled by `re` (which decides whether it is valid) and by `regex`."""

    __slots__ = ("limited", "plain", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.plain = re.compile(text)  # re.error: invalid, as it always was
        try:
            self.limited: Any = regex.compile(text, regex.VERSION0)
        except (regex.error, OverflowError, RecursionError, ValueError):
            self.limited = None

    def run(self, how: str, text: str) -> Any:
        if self.limited is None:
            return getattr(self.plain, how)(text)
        key = (how, self.text, text)
        known = _TIMED_OUT.get(key)
        if known is not None:
            raise known
        try:
            # concurrent=False: the search keeps the GIL; released, every check would wait
            # to get it back from a run's agent threads
            return getattr(self.limited, how)(text, timeout=REGEX_TIMEOUT_S, concurrent=False)
        except TimeoutError:
            err = RegexTimeoutError(self.text, text, REGEX_TIMEOUT_S)
            _TIMED_OUT[key] = err
            while len(_TIMED_OUT) > 16:
                _TIMED_OUT.popitem(last=False)
            raise err from None


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str) -> _Pattern:
    """`pattern` compiled once (a suite repeats its patterns across cases).

    Raises:
        re.error: The pattern is not valid.
    """
    return _Pattern(pattern)


def search(pattern: str, text: str) -> Any:
    """`re.search(pattern, text)`, within `REGEX_TIMEOUT_S`.

    Raises:
        re.error: The pattern is not valid.
        RegexTimeoutError: The search ran past the limit.
    """
    return compiled(pattern).run("search", text)


def fullmatch(pattern: str, text: str) -> Any:
    """`re.fullmatch(pattern, text)`, within `REGEX_TIMEOUT_S` (see `search`)."""
    return compiled(pattern).run("fullmatch", text)
