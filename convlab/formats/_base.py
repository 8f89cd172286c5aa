"""Shared loader plumbing: the format registry, problem collection, YAML/JSON with line numbers."""

from __future__ import annotations

import difflib
import gc
import reprlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from convlab._readable import cut
from convlab.errors import Problem, SuiteError
from convlab.formats._unicode import SURROGATE, YAML_ESCAPE, mask, mend
from convlab.formats._yaml_budget import (
    MAX_YAML_CHARS,
    SAFE_LOADER,
    YAMLBudgetError,
    budgeted_load,
)
from convlab.model.suite import Case, Suite
from convlab.registry import Registry

__all__ = [
    "FORMATS",
    "MAX_YAML_CHARS",
    "Format",
    "LineDict",
    "LineList",
    "Problems",
    "YAMLBudgetError",
    "closest_name",
    "did_you_mean",
    "dotted",
    "gc_paused",
    "line_of",
    "plain",
    "register_format",
    "safe_yaml",
    "short_repr",
    "with_cases",
    "yaml_with_lines",
]


def with_cases(suite: Suite, cases: Sequence[Case]) -> Suite:
    """`suite` holding `cases`, which were each validated when built: they are not validated
    again, and a sequence read on demand (a big JSONL file's) is not read here."""
    return suite.model_copy(update={"cases": cases})


@dataclass(frozen=True)
class Format:
    """A registered suite format: which files it claims and how it reads them."""

    name: str
    suffixes: tuple[str, ...]
    sniff: Callable[[Path, str], bool]
    """Claims a file by its content (called only for a matching suffix)."""
    load: Callable[[Path, str], Suite]
    """Reads the file's text into a Suite or raises SuiteError with every problem."""
    read: Callable[[Path, bytes], Suite] | None = None
    """Reads the file's bytes itself, never decoding them whole (a streamed format: the bytes
    are then the only copy of a big file); `sniff` gets the first MiB, decoded. None: `load`."""


FORMATS: Registry[Format] = Registry("suite format")


def register_format(
    name: str,
    suffixes: tuple[str, ...],
    sniff: Callable[[Path, str], bool],
    read: Callable[[Path, bytes], Suite] | None = None,
) -> Callable[[Callable[[Path, str], Suite]], Callable[[Path, str], Suite]]:
    """Register a loader function `load(path, text) -> Suite` as format `name` (with `read`,
    the same loader on the file's bytes, used for files; see `Format.read`)."""

    def deco(fn: Callable[[Path, str], Suite]) -> Callable[[Path, str], Suite]:
        FORMATS.add(name, Format(name, suffixes, sniff, fn, read))
        return fn

    return deco


def dotted(loc: tuple[int | str, ...] | list[int | str], prefix: str = "") -> str:
    """Join a location as a field path: ('turns', 2, 'args', 'a') -> 'turns[2].args.a'."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass
class Problems:
    """Collects every problem in one file, then raises them together."""

    file: str
    items: list[Problem] = field(default_factory=list)

    def add(self, line: int | None, path: str, message: str) -> None:
        """Record one problem."""
        self.items.append(Problem(self.file, line, path, message))

    def add_validation(
        self,
        exc: ValidationError,
        line: int | None,
        prefix: str = "",
        lines: Callable[[tuple[int | str, ...]], int | None] | None = None,
    ) -> None:
        """Record each error of a pydantic ValidationError with its field path."""
        for err in exc.errors():
            loc = drop_union_tags(err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            at = lines(loc) if lines else None
            self.add(at if at is not None else line, dotted(loc, prefix), msg)

    def raise_if_any(self) -> None:
        """Raise SuiteError if anything was recorded."""
        if self.items:
            raise SuiteError(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)


def drop_union_tags(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A pydantic error location without the union's tags, as the user wrote the path.

    pydantic inserts the discriminator value (`regex`, `check`, ...) after the list index or
    the `assertion` key that holds a union member, and `function-after[...]` wrappers.
    """
    from convlab.model.assertions import KIND_NAMES

    out: list[int | str] = []
    for part in loc:
        if isinstance(part, str) and "[" in part and "(" in part:
            continue
        follows_union = bool(out) and (isinstance(out[-1], int) or out[-1] == "assertion")
        if isinstance(part, str) and part in KIND_NAMES and follows_union:
            continue
        out.append(part)
    return tuple(out)


class LineDict(dict[str, Any]):
    """A YAML mapping that remembers its own line and each key's line (1-based)."""

    line: int = 0
    key_lines: dict[str, int]


class LineList(list[Any]):
    """A YAML sequence that remembers its line and each item's line (1-based)."""

    line: int = 0
    item_lines: list[int]


class _LineLoader(yaml.SafeLoader):
    pass


def _map(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key is None or isinstance(key, int | float | bool):
            key = str(key)  # JSON keys are strings: what a native round trip can keep
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "unhashable key", key_node.start_mark
            ) from None
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _seq(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(n, deep=True) for n in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [n.start_mark.line + 1 for n in node.value]
    return out


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """Dates stay the text written: JSON has no dates, and a date never equals a JSON value."""
    return str(loader.construct_scalar(node))


class _FastLineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser (the faster one) with the same line-keeping constructors."""


for _loader in (_LineLoader, _FastLineLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)
    _loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def safe_yaml(text: str) -> Any:
    """Plain YAML data (for a sniff), within the same budget as `yaml_with_lines`.

    Raises:
        yaml.YAMLError: Invalid YAML, or a text or document over the budget.
    """
    if len(text) > MAX_YAML_CHARS:
        raise YAMLBudgetError(None, None, "file too big", None)
    try:
        return budgeted_load(text, SAFE_LOADER)
    except (yaml.YAMLError, UnicodeEncodeError) as exc:
        # libyaml refuses surrogate escapes (and cannot read a surrogate in the text): the
        # pure-Python parser reads them, so such a file is claimed by the format it belongs to
        # and its loader reports them
        hidden = mask(text) if SURROGATE.search(text) else None
        if isinstance(exc, YAMLBudgetError) or (hidden is None and not YAML_ESCAPE.search(text)):
            raise
    data = budgeted_load(text if hidden is None else hidden, yaml.SafeLoader)
    return mend(data, lambda loc, message: None, "YAML", masked=hidden is not None)


def yaml_with_lines(text: str, problems: Problems) -> Any:
    """Parse YAML keeping line numbers (LineDict/LineList); a syntax error becomes a problem.

    libyaml parses first (same nodes, same lines); only when it fails does the pure-Python
    parser read the text again, so a problem is worded (and placed) the same in every format,
    and a text only libyaml rejects still loads as before. A text longer than
    MAX_YAML_CHARS, or a document bigger than the node and character budget once its
    aliases are expanded, is a problem (with the line of the first alias), never built.

    Text that is not Unicode (a lone surrogate, from a `"\\udcff"` escape or written in the
    text itself, as a Python escape in a docstring does) is a problem at its key's line and
    field path, and the data is still returned, with that text mended
    (`convlab.formats._unicode.mend`), so the caller reports every other problem too: None
    is returned only when the text does not parse.
    """
    if len(text) > MAX_YAML_CHARS:
        problems.add(None, "", f"file too big: {len(text):,} characters (limit {MAX_YAML_CHARS:,})")
        return None
    hidden = mask(text) if SURROGATE.search(text) else None
    masked = hidden is not None
    data = _parse_yaml(text if hidden is None else hidden, problems)
    if data is not None and (masked or YAML_ESCAPE.search(text)):

        def report(loc: tuple[int | str, ...], message: str) -> None:
            problems.add(line_of(data, loc), dotted(loc), message)

        data = mend(data, report, "YAML", masked=masked)
    return data


def _parse_yaml(text: str, problems: Problems) -> Any:
    try:
        return budgeted_load(text, _FastLineLoader)
    except YAMLBudgetError as exc:
        mark = exc.problem_mark
        problems.add(mark.line + 1 if mark else None, "", f"invalid YAML: {exc.problem}")
        return None
    except Exception:  # the pure-Python parser below says what is wrong, and where
        pass
    try:
        return budgeted_load(text, _LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problems.add(line, "", f"invalid YAML: {exc.problem or exc}")
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        # e.g. ValueError for an integer of more than 4,300 digits (dates stay text)
        problems.add(None, "", f"invalid YAML: {exc}")
    return None


def line_of(node: Any, loc: tuple[int | str, ...] | list[int | str]) -> int | None:
    """The line of the deepest LineDict/LineList element reachable along `loc`."""
    best = getattr(node, "line", None) or None
    for part in loc:
        if isinstance(node, LineDict) and isinstance(part, str) and part in node:
            best = node.key_lines.get(str(part), best)
            node = node[part]
        elif isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node):
            best = node.item_lines[part]
            node = node[part]
        else:
            break
        inner = getattr(node, "line", None)
        if inner:
            best = inner if isinstance(node, LineDict) and part is not None else best
    return best


def plain(value: Any, _memo: dict[int, Any] | None = None) -> Any:
    """Copy YAML data into plain dicts/lists (no line bookkeeping), for the model and users.

    Shared YAML aliases stay shared in the copy, so an alias bomb stays linear.
    """
    memo = {} if _memo is None else _memo
    if not isinstance(value, dict | list):
        return value
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, dict):
        out_d: dict[Any, Any] = {}
        memo[id(value)] = out_d
        for k, v in value.items():
            out_d[k] = plain(v, memo)
        return out_d
    out_l: list[Any] = []
    memo[id(value)] = out_l
    out_l.extend(plain(v, memo) for v in value)
    return out_l


_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxdict = _SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = 4
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 60


def short_repr(value: Any, limit: int = 60) -> str:
    """`repr(value)` cut to `limit` characters, built without walking the whole value.

    `reprlib` stops after a few items and levels, so a huge value (an expanded YAML alias,
    a long string) costs the same as a small one; `repr()` then slicing could take gigabytes.
    """
    shown = _SHORT.repr(value)
    return cut(shown, limit, "...")


def closest_name(word: Any, choices: Iterable[str], *, fold: bool = False) -> str | None:
    """The choice closest to `word` (difflib ratio >= 0.6), or None when nothing is close.

    With `fold`, a choice equal to the word once `_` and `-` are dropped and case ignored
    wins first: `schema_version` -> `schemaVersion`, which difflib alone may miss.
    """
    text, options = str(word), list(choices)
    if fold:
        squash = text.replace("_", "").replace("-", "").lower()
        for option in options:
            if option.lower() == squash:
                return option
    close = difflib.get_close_matches(text, options, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(
    word: Any, choices: Iterable[str], form: str = " Did you mean {!r}?", *, fold: bool = False
) -> str:
    """A did-you-mean hint in the format's own wording (`form` receives the closest name),
    or "" when no choice is close."""
    close = closest_name(word, choices, fold=fold)
    return "" if close is None else form.format(close)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a loader builds many small, acyclic objects.

    With the collector on, each burst of allocations makes CPython re-walk the whole growing
    heap, which makes a large load several times slower. Afterwards the new, long-lived suite is
    moved straight to the oldest generation (`gc.freeze()` + `gc.unfreeze()`, documented to do
    exactly that) instead of being walked again as young objects; skipped when the host froze
    objects itself (its permanent generation is left alone).

    No full collection ends the load: it made the load and the work after it slower, for large
    JSONL and JSON suites alike (the pass it saves later costs less than it does).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
