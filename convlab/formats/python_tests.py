"""thinkingbox (`tb`) test files: Python tests with `!` YAML, YAML test cases, test lists.

Three kinds of file are claimed, all inside a thinkingbox dataset (a folder with `scenario/`
and `test_case/`):
- a `.py` file with at least one top-level function whose first statement is a `!` YAML
  docstring (each such function is a `code`-mode case with id `<file name>:<function>`);
- a YAML `{test_cases: [...]}` file whose entries have `query` (thinkingbox's non-Python form);
- a YAML test list: `- file.py:test_name` lines, loading exactly those tests, found by name.
Scenario files (`world_state`), `.meta.yaml` (`$history`), agents and ordinary Python modules
are data read through the test files and are never claimed. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from convlab.formats._base import Problems, register_format, safe_yaml, yaml_with_lines
from convlab.formats._python_case import TestSpec, build_case
from convlab.formats._python_dataset import (
    Dataset,
    find_root,
    resolve_test_file,
    test_file_candidates,
)
from convlab.formats._python_parse import (
    is_bang_string,
    kind_of,
    parse_python,
    parse_test_file,
    quiet_parse,
    yaml_line,
)
from convlab.model.suite import Case, Defaults, Source, Suite

__all__ = ["load_python_tests", "resolve_test_file", "sniff", "test_file_candidates"]

FORMAT = "python_tests"
TEST_FN = "__tb_test_fn"
"""The name thinkingbox binds a test function to inside `test_code`."""

_BANG = re.compile(r"""(?:\"\"\"|'''|"|')!""")
_BROKEN_DEF = re.compile(r"^def\s", re.M)
_BROKEN_DOC = re.compile(r"""^[ \t]+[rRuU]?(?:\"\"\"|'''|"|')!""", re.M)
_TEST_NAME = re.compile(r"^[^:\s]+\.(?:py|ya?ml):[^:\s]+$")
_LIST_HINT = re.compile(r"""^-[ \t]+["']?[^\s"':]+\.(?:py|ya?ml):""", re.M)
_CASES_HINT = re.compile(r"^test_cases[ \t]*:", re.M)


def sniff(path: Path, text: str) -> bool:
    """Claim thinkingbox test files and test lists; never ordinary modules or data YAML."""
    try:
        if path.suffix.lower() == ".py":
            return _sniff_py(text)
        return _sniff_yaml(text)
    except Exception:  # a sniff only answers yes or no; loading reports the problems
        return False


def _sniff_py(text: str) -> bool:
    if not _BANG.search(text):
        return False
    try:
        tree = quiet_parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # a broken test file is still a test file: claim it so its syntax error is reported
        return bool(_BROKEN_DEF.search(text) and _BROKEN_DOC.search(text))
    return any(
        isinstance(node, ast.FunctionDef) and node.body and is_bang_string(node.body[0])
        for node in tree.body
    )


def _sniff_yaml(text: str) -> bool:
    if not (_LIST_HINT.search(text) or _CASES_HINT.search(text)):
        return False
    data = safe_yaml(text)  # an alias bomb is refused, not expanded
    if isinstance(data, list):
        return _is_test_list(data)
    if isinstance(data, dict) and isinstance(data.get("test_cases"), list):
        items = data["test_cases"]
        dicts = [i for i in items if isinstance(i, dict)]
        holo = any("input" in i or "turns" in i for i in dicts)  # HoloDeck's test_cases
        return not holo and any("query" in i for i in dicts)
    return False


def _is_test_list(data: list[Any]) -> bool:
    return (
        bool(data)
        and all(isinstance(i, str) for i in data)
        and any(_TEST_NAME.match(i.strip()) for i in data)
    )


@register_format(FORMAT, (".py", ".yaml", ".yml"), sniff)
def load_python_tests(path: Path, text: str) -> Suite:
    """Load a thinkingbox test file or test list into a Suite (SuiteError lists every problem)."""
    problems = Problems(str(path))
    dataset = Dataset(find_root(path))
    if path.suffix.lower() == ".py":
        specs = _py_specs(path, text, problems)
        cases = _build(specs, dataset, problems)
    else:
        data = _yaml(text, problems)
        if isinstance(data, list):
            cases = _load_list(path, data, dataset, problems)
        else:
            cases = _build(_yaml_specs(path, data, problems), dataset, problems)
    problems.items.extend(dataset.problems)
    problems.raise_if_any()
    return Suite(
        id=path.name,
        name=path.stem,
        metadata={"format": FORMAT, "dataset_root": str(dataset.root) if dataset.root else None},
        defaults=Defaults(scenario=_common_scenario(cases)),
        cases=cases,
        # only this file: a listed test file stays a suite of its own in a folder load
        sources=[Source(file=str(path), line=None, format=FORMAT)],
    )


def _common_scenario(cases: list[Case]) -> str | None:
    names = {c.metadata.get("scenario") for c in cases}
    return names.pop() if len(names) == 1 else None


def _build(specs: list[TestSpec], dataset: Dataset, problems: Problems) -> list[Case]:
    cases = [build_case(spec, dataset, problems) for spec in specs]
    return [c for c in cases if c is not None]


def _yaml(text: str, problems: Problems) -> Any:
    try:
        return yaml_with_lines(text, problems)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        problems.add(None, "", f"invalid YAML: {exc}")
        return None


def _py_specs(path: Path, text: str, problems: Problems) -> list[TestSpec]:
    """One spec per test function of a `.py` file (problems recorded for the others)."""
    parsed = parse_test_file(text, problems)
    if parsed is None:
        return []
    specs = []
    for test in parsed.tests:
        # a `metadata:` mapping in a module-level `!` block becomes the case's metadata, as
        # thinkingbox's `TestCase(**fn.config)` takes it (hydrator.py `load_test_file`); in a
        # function's own YAML it is an invalid key there and here (CONFIG_FIELDS)
        meta = test.config.get("metadata")
        given_twice = [k for k in ("uid", "test_code") if k in test.config]
        for key in given_twice:  # only a module-level block can hold them (CONFIG_FIELDS)
            line = test.line_at((key,))
            if not any(p.line == line and p.path == key for p in problems):
                msg = (
                    f"a module-level `!` block cannot set {key!r}: thinkingbox sets it from "
                    f"the test itself, so `TestCase(**config)` gets it twice (a TypeError)"
                )
                problems.add(line, key, msg)
        if given_twice:
            continue
        if meta is not None and not isinstance(meta, dict):
            line = test.line_at(("metadata",))
            if not any(p.line == line and p.path == "metadata" for p in problems):
                problems.add(line, "metadata", f"must be a mapping, got {kind_of(meta)}")
            continue
        specs.append(
            TestSpec(
                name=test.name,
                file=path,
                line=test.line,
                config=test.config,
                locate=test.line_at,
                function=test.name,
                code=parsed.test_code(test),
                code_line=test.line,
                metadata=meta or {},
            )
        )
    return specs


def _yaml_specs(path: Path, data: Any, problems: Problems) -> list[TestSpec]:
    """One spec per entry of a `{test_cases: [...]}` file."""
    items = data.get("test_cases") if isinstance(data, dict) else None
    if not isinstance(items, list):
        problems.add(1, "test_cases", "a thinkingbox YAML test file needs a 'test_cases' list")
        return []
    specs, seen = [], set()
    for i, item in enumerate(items):
        where = f"test_cases[{i}]"
        line = yaml_line(data, ("test_cases", i))
        if not isinstance(item, dict):
            problems.add(line, where, f"a test case must be a mapping, got {kind_of(item)}")
            continue
        spec = _yaml_spec(path, item, where, problems)
        if spec is not None and spec.name in seen:
            problems.add(line, f"{where}.uid", f"duplicate uid {spec.name!r}")
        elif spec is not None:
            seen.add(spec.name)
            specs.append(spec)
    return specs


def _yaml_spec(path: Path, item: dict[Any, Any], where: str, problems: Problems) -> TestSpec | None:
    def locate(loc: tuple[int | str, ...]) -> int | None:
        return yaml_line(item, loc)

    # other keys are ignored, as thinkingbox's `TestCase` (pydantic, extra="ignore") does
    before = len(problems.items)
    uid, code, meta = item.get("uid"), item.get("test_code"), item.get("metadata")
    if not isinstance(uid, str) or not uid:
        problems.add(locate(("uid",)), f"{where}.uid", "required: the test's name (text)")
    if not isinstance(code, str):
        problems.add(locate(("test_code",)), f"{where}.test_code", "required: Python source")
    if meta is not None and not isinstance(meta, dict):
        problems.add(locate(("metadata",)), f"{where}.metadata", "must be a mapping")
    function = _code_function(code, locate(("test_code",)), where, problems)
    if len(problems.items) > before:
        return None
    assert isinstance(uid, str) and isinstance(code, str) and function is not None
    code_line = locate(("test_code",)) or 1
    line = locate(()) or 1
    return TestSpec(uid, path, line, item, locate, function, code, code_line, meta or {}, where)


def _code_function(code: Any, line: int | None, where: str, problems: Problems) -> str | None:
    """The function a YAML entry's `test_code` runs: `__tb_test_fn` if it binds it, else its
    last top-level function."""
    if not isinstance(code, str):
        return None
    sub = Problems(problems.file)
    tree = parse_python(code, sub)
    for p in sub:
        at = (line or 0) + (p.line or 0) if line else None
        problems.add(at, f"{where}.test_code", p.message)
    if tree is None:
        return None
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if TEST_FN in code or not names:
        if TEST_FN not in code:
            problems.add(line, f"{where}.test_code", f"defines no function (nor {TEST_FN})")
        return TEST_FN
    return names[-1]


def _load_list(path: Path, data: list[Any], dataset: Dataset, problems: Problems) -> list[Case]:
    """The tests a test list names, in its order, found by file name in the dataset."""
    wanted: dict[str, list[tuple[str, int | None, int]]] = {}
    seen: dict[str, int | None] = {}
    for i, item in enumerate(data):
        line = yaml_line(data, (i,))
        parts = item.strip().split(":") if isinstance(item, str) else []
        if len(parts) != 2 or not all(parts):
            problems.add(line, f"[{i}]", f"invalid test name {item!r}, must be 'filename:testname'")
        elif item.strip() in seen:
            msg = f"{item.strip()!r} is listed twice (also on line {seen[item.strip()]})"
            problems.add(line, f"[{i}]", msg)
        else:
            seen[item.strip()] = line
            wanted.setdefault(parts[0], []).append((parts[1], line, i))
    if dataset.root is None:
        msg = "no dataset root: no folder above this list has scenario/ (or dataset/scenario/)"
        problems.add(1, "", msg)
        return []
    found: dict[int, Case] = {}
    for name, entries in wanted.items():
        found.update(_list_file(dataset, name, entries, problems))
    return [found[i] for i in sorted(found)]


def _list_file(
    dataset: Dataset, name: str, entries: list[tuple[str, int | None, int]], problems: Problems
) -> dict[int, Case]:
    assert dataset.root is not None
    try:
        file = resolve_test_file(dataset.root, name)
    except FileNotFoundError as exc:
        for _, line, i in entries:
            problems.add(line, f"[{i}]", str(exc.args[0]))
        return {}
    own = Problems(str(file))  # the test file's problems, with its lines, reported there
    specs = _file_specs(file, own)
    if own:  # the file cannot be read as a whole: its problems are reported, not its tests
        problems.items.extend(own)
        return {}
    out: dict[int, Case] = {}
    by_name = {s.name: s for s in specs}
    for test, line, i in entries:
        spec = by_name.get(test)
        if spec is None:
            known = ", ".join(by_name) or "none"
            problems.add(line, f"[{i}]", f"no test {test!r} in {file} (tests there: {known})")
            continue
        case = build_case(spec, dataset, own)
        if case is not None:
            out[i] = case
    problems.items.extend(own)
    return out


def _file_specs(file: Path, own: Problems) -> list[TestSpec]:
    """The specs of a listed test file; problems go to the file's own collector `own`."""
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        own.add(None, "", f"cannot read: {exc}")
        return []
    if file.suffix.lower() == ".py":
        return _py_specs(file, text, own)
    return _yaml_specs(file, _yaml(text, own), own)
