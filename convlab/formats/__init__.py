"""Reading suites: `load(path)` picks the format per file and returns one Suite.

Each format is one module that registers a loader with `register_format`; importing this
package imports them all, so the registry is complete.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from convlab.errors import Problem, SuiteError
from convlab.formats._base import (
    FORMATS,
    MAX_YAML_CHARS,
    Format,
    Problems,
    YAMLBudgetError,
    register_format,
    safe_yaml,
)
from convlab.model.suite import Source, Suite

__all__ = ["FORMATS", "Format", "Problems", "detect", "load", "register_format"]

_BUILTINS = ("native", "jsonl", "suite_json", "yaml_cases", "python_tests")


def _import_builtins() -> None:
    import importlib

    for name in _BUILTINS:
        try:
            importlib.import_module(f"convlab.formats.{name}")
        except ModuleNotFoundError as exc:  # a format not written yet
            if exc.name != f"convlab.formats.{name}":
                raise


_import_builtins()


def detect(path: Path, text: str) -> Format | None:
    """The format that claims this file (by suffix, then content), or None."""
    suffix = path.suffix.lower()
    for name in FORMATS:
        fmt = FORMATS.get(name)
        if suffix in fmt.suffixes and fmt.sniff(path, text):
            return fmt
    return None


def _read(path: Path) -> bytes:
    """The file's bytes; a FIFO, device or socket is refused unread (reading could block)."""
    if not path.is_file():
        raise SuiteError.one(str(path), None, "", _NOT_REGULAR)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SuiteError.one(str(path), None, "", f"cannot read: {exc.strerror}") from None


def _decode(path: Path, data: bytes) -> str:
    """The file's text; bytes that are not UTF-8 are reported with their line (1-based) and
    byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        start = exc.start + bom if exc.object is not data else exc.start
        line = data.count(b"\n", 0, start) + 1
        message = f"not UTF-8 text: {exc.reason} (byte {start}, 0x{data[start]:02x})"
        raise SuiteError.one(str(path), line, "", message) from None


_HEAD = 1 << 20
"""Bytes a streamed format's sniff sees (decoded)."""


def _streamed(path: Path, data: bytes, format: str | None) -> Format | None:
    """The format that reads this file from its bytes (`Format.read`), or None: the text is
    decoded and `detect` picks as before. Only the first format taking the suffix is asked."""
    if format:
        fmt = FORMATS.get(format)
        return fmt if fmt.read else None
    suffix = path.suffix.lower()
    for name in FORMATS:
        fmt = FORMATS.get(name)
        if suffix in fmt.suffixes:
            head = data[:_HEAD].decode("utf-8-sig", "replace")
            return fmt if fmt.read and fmt.sniff(path, head) else None
    return None


_NOT_REGULAR = (
    "not a regular file (a FIFO, device or socket): a suite is read from a file or folder"
)


def _claimable(path: Path, format: str | None) -> bool:
    """Whether any (or the forced) format takes files with this suffix: others are not read."""
    names = [format] if format else list(FORMATS)
    return any(path.suffix.lower() in FORMATS.get(n).suffixes for n in names)


def _load_file(path: Path, format: str | None, strict: bool) -> Suite | None:
    if not strict and not _claimable(path, format):
        return None  # images, READMEs, data files beside the suites
    try:
        data = _read(path)
        streamed = _streamed(path, data, format)
        if streamed is not None and streamed.read is not None:
            return streamed.read(path, data)  # never decoded whole: bytes are the one copy
        text = _decode(path, data)
    except SuiteError:
        if strict or path.suffix.lower() != ".py":
            raise  # a data file of suites that cannot be read is a problem, never skipped
        return None  # e.g. a Latin-1 helper module in a folder of suites
    del data
    if path.suffix.lower() in (".yaml", ".yml") and len(text) > MAX_YAML_CHARS:
        # refused before any sniff parses it (a sniff would read it whole)
        too_big = f"file too big: {len(text):,} characters (limit for YAML {MAX_YAML_CHARS:,})"
        raise SuiteError.one(str(path), None, "", too_big)
    fmt = FORMATS.get(format) if format else detect(path, text)
    if fmt is None:
        if not strict:
            return None
        raise SuiteError([Problem(str(path), *_unclaimed(path, text))])
    return fmt.load(path, text)


def _unclaimed(path: Path, text: str) -> tuple[int | None, str, str]:
    """(line, field, message): why no format claims the file given alone: empty, over the
    YAML budget (a bomb, too deep: no sniff could read it), a thinkingbox data file, unknown."""
    if not text.strip():
        return None, "", "empty file: it holds no suite"
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", ".json"):  # JSON is read as YAML too (native suites)
        try:
            data = safe_yaml(text)
        except YAMLBudgetError as exc:
            mark, kind = exc.problem_mark, "JSON" if suffix == ".json" else "YAML"
            return (mark.line + 1 if mark else None), "", f"invalid {kind}: {exc.problem}"
        except Exception:  # not YAML: not a scenario we can tell
            data = None
        if suffix != ".json" and (
            path.parent.name == "scenario"
            or (isinstance(data, dict) and ("world_state" in data or "bot_instructions" in data))
        ):
            return None, "", _SCENARIO
        if suffix != ".json" and not isinstance(data, dict | list):
            shape = _yaml_top(text)
            if shape is not None:
                return shape[0], "", f"{shape[1]}; {_SUITE_SHAPE}"
    known = ", ".join(sorted({s for n in FORMATS for s in FORMATS.get(n).suffixes}))
    return None, "", f"not a recognised suite file (supported suffixes: {known})"


_SCENARIO = "this is a thinkingbox scenario: load the dataset folder (the one holding scenario/)"

_SUITE_SHAPE = (
    "a YAML suite file is a mapping with `test_cases:` (a list of cases, each with `input:` "
    "or `turns:`) or `test_cases_file:`, a top-level list of such cases, or convlab's own "
    "form with `convlab_suite: 1`"
)
_CORE_TAG = "tag:yaml.org,2002:"
_SCALAR_KINDS = {"str": "text", "int": "a number", "float": "a number", "bool": "a boolean"}


def _yaml_top(text: str) -> tuple[int | None, str] | None:
    """(line, what it is) for a YAML text whose top level no suite can be: invalid YAML, no
    document, a scalar or a tagged node; None for a plain mapping or list."""
    import yaml

    from convlab._readable import visible
    from convlab.formats._yaml_budget import SAFE_LOADER

    try:
        node = yaml.compose(text, Loader=SAFE_LOADER)  # nodes only: no tag is constructed
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        why = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return (mark.line + 1 if mark else None), f"invalid YAML: {why}"
    if node is None:
        return None, "the file holds no YAML document (only comments or `---`)"
    line = node.start_mark.line + 1
    if not node.tag.startswith(_CORE_TAG):
        tag = node.tag if node.tag.startswith("!") else f"!<{node.tag}>"
        return line, f"the top level is tagged {visible(tag)!r}, which no suite file uses"
    name = node.tag.removeprefix(_CORE_TAG)
    if isinstance(node, yaml.ScalarNode):
        value = visible(str(node.value))
        value = value if len(value) <= 40 else value[:39] + "…"
        kind = _SCALAR_KINDS.get(name, "null" if name == "null" else name)
        shown = "an empty value" if not node.value else f"{kind} {value!r}"
        return line, f"the top level is a single scalar, {shown}, not a mapping or a list"
    if name not in ("map", "seq"):
        return line, f"the top level is tagged '!!{name}', which no suite file uses"
    return None


def load(path: str | Path, format: str | None = None) -> Suite:
    """Load a suite from a file or a folder (every supported file below it, sorted).

    Args:
        path: A suite file, or a folder searched recursively.
        format: Force a format by name (`jsonl`, `suite_json`, `yaml_cases`,
            `python_tests`, `native`) instead of detecting it.

    Raises:
        SuiteError: With every problem found in every file, each with file, line and path.
    """
    root = Path(path)
    if not root.exists():
        raise SuiteError.one(str(root), None, "", "no such file or folder")
    if not root.is_file() and not root.is_dir():
        raise SuiteError.one(str(root), None, "", _NOT_REGULAR)  # never opened: could block
    if root.is_file():
        suite = _load_file(root, format, strict=True)
        assert suite is not None
        return suite
    suites: list[Suite] = []
    failed: dict[str, list[Problem]] = {}
    real: dict[str, str] = {}
    for file, resolved_file in _files_below(root):
        if resolved_file is not None:
            real[str(file)] = resolved_file
        try:
            loaded = _load_file(file, format, strict=False)
        except SuiteError as err:
            failed[resolved_file or os.path.realpath(file)] = err.problems
            continue
        if loaded is not None:
            suites.append(loaded)
    resolved = [
        {real.get(src.file) or os.path.realpath(src.file) for src in s.sources} for s in suites
    ]
    # a file another suite read (a HoloDeck test_cases_file) is judged as part of that suite
    covered = set().union(*resolved)
    problems = [p for f, ps in failed.items() if f not in covered for p in ps]
    if problems:
        raise SuiteError(list(dict.fromkeys(problems)))  # an included file may repeat them
    if not suites:
        raise SuiteError.one(str(root), None, "", "no suite files found in this folder")
    return merge(_drop_included(suites, resolved), name=root.name)


def _files_below(root: Path) -> list[tuple[Path, str | None]]:
    """Every file below `root`, in the order of `sorted(root.rglob("*"))`, in one walk, each
    with its resolved path (None for a symlink: `os.path.realpath` it when needed).

    Hidden folders (`.git`, `__pycache__`) are never entered and hidden files are skipped;
    folders reached by a symlink are not followed (as `rglob`), files reached by one are.
    Each folder's entries are visited in name order, depth first, which is the order of
    the paths' parts. Resolving each file would cost a `lstat` per path part; a path below
    the resolved root through no symlink is already resolved.
    """
    out: list[tuple[Path, str | None]] = []
    stack = [_entries(root, os.path.realpath(root))]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
        elif step[1] is _FOLDER:
            stack.append(_entries(step[0], step[2]))
        else:
            out.append((step[0], step[2]))
    return out


_FOLDER, _FILE = True, False


def _entries(folder: Path, real: str | None) -> Iterator[tuple[Path, bool, str | None]]:
    """(path, is a folder, resolved path or None) of each visible file and real folder in
    `folder` (resolved: `real`), by name."""
    try:
        with os.scandir(folder) as it:
            entries = sorted((e for e in it if not e.name.startswith((".", "__"))), key=_name)
    except OSError:
        return  # an unreadable folder: as with rglob, nothing below it is seen
    for entry in entries:
        try:
            below = None if real is None else os.path.join(real, entry.name)
            if entry.is_dir(follow_symlinks=False):
                yield folder / entry.name, _FOLDER, below
            elif entry.is_file():
                yield folder / entry.name, _FILE, None if entry.is_symlink() else below
        except OSError:
            continue


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _drop_included(suites: list[Suite], files: list[set[str]]) -> list[Suite]:
    """Drop a suite whose files another suite also read, and more (a HoloDeck
    `test_cases_file`): `files[i]` are suite i's resolved source files.

    Only a suite that shares a file can include another, so each suite is compared with the
    suites reading its first file, not with all: linear for a folder of one-file suites.
    """
    readers: dict[str, list[int]] = {}
    for i, names in enumerate(files):
        if len(names) > 1:  # only a suite of several files can include another
            for name in names:
                readers.setdefault(name, []).append(i)
    kept = []
    for i, suite in enumerate(suites):
        mine = files[i]
        first = next(iter(mine), None)
        if first is None or not any(mine < files[j] for j in readers.get(first, ())):
            kept.append(suite)
    return kept


def _same_place(a: Source | None, b: Source | None) -> bool:
    """Both sources are the same line of the same file (format-independent)."""
    if a is None or b is None or a.line != b.line:
        return False
    return Path(a.file).resolve() == Path(b.file).resolve()


def merge(suites: list[Suite], name: str) -> Suite:
    """Join suites from several files; a case id used twice is reported with both files."""
    if len(suites) == 1:
        return suites[0]
    seen: dict[str, Source | None] = {}
    problems: list[Problem] = []
    cases = []
    for suite in suites:
        for case in suite.cases:
            if case.id in seen and _same_place(seen[case.id], case.source):
                continue  # one test reached twice (a thinkingbox test list and its own file)
            if case.id in seen:
                first, again = seen[case.id], case.source
                problems.append(
                    Problem(
                        again.file if again else suite.id,
                        again.line if again else None,
                        f"cases[{case.id!r}]",
                        f"duplicate case id {case.id!r}, also in {first}",
                    )
                )
            else:
                seen[case.id] = case.source
                cases.append(case)
    if problems:
        raise SuiteError(problems)
    return Suite(
        id=name,
        name=name,
        metadata={"suites": {s.id: s.metadata for s in suites if s.metadata}},
        cases=cases,
        assertions=[a for s in suites for a in s.assertions],
        sources=[src for s in suites for src in s.sources],
    )
