"""HoloDeck `holodeck test` test cases: an agent.yaml, or a `test_cases_file` payload.

Two shapes are read:
- an agent.yaml: a mapping with `test_cases:` (inline list) or `test_cases_file:` (a path,
  relative to the agent.yaml, to a YAML list of cases or a mapping with `test_cases:`; the
  two keys exclude each other; an empty file gives no cases). Every other top-level key
  (name, model, tools, evaluations, observability, ...) is kept as written in
  `Suite.metadata`: `${ENV}` placeholders there are never expanded (they may hold secrets).
  `${VAR}` in the test cases and `evaluations.metrics` is substituted over the text before
  parsing, as HoloDeck does (tool `args` included); an unset variable is an error there.
  `evaluations.metrics` is also the default metric list of every case and turn.
- a payload file on its own: a top-level list of cases (what `test_cases_file` points at).

Cases: see `convlab.formats._yaml_case`. Case id = the test's `name` (HoloDeck names are
unique within a file in every known file; a repeated name is a problem naming both lines),
else `<file stem>[<index>]`. Field paths are written `test_cases[<i>]...` in both shapes.
Suite id = the agent's `name` (else the file stem); `Suite.sources` lists the file and, when
used, the `test_cases_file` payload.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from convlab.errors import SuiteError
from convlab.formats._base import (
    LineList,
    Problems,
    plain,
    register_format,
    safe_yaml,
    yaml_with_lines,
)
from convlab.formats._yaml_case import CaseContext, build_case, case_name
from convlab.formats._yaml_common import (
    At,
    env_lines,
    expand_env,
    kind_name,
    masked,
    type_error,
)
from convlab.formats._yaml_metrics import GraderImporter, parse_metrics
from convlab.model.suite import NATIVE_TAG, Case, Source, Suite

__all__ = ["load_yaml_cases", "sniff"]

_FORMAT = "yaml_cases"
_TOP_KEY = re.compile(r"^test_cases(_file)?\s*:", re.MULTILINE)


def sniff(path: Path, text: str) -> bool:
    """Claim an agent.yaml with test cases, or a top-level list of HoloDeck cases.

    Not claimed: thinkingbox files (cases with `query`, lists of `file.py:test` strings,
    scenarios with `world_state`/`bot_instructions`, `*.meta.yaml`) and convlab's native form.
    """
    if path.name.lower().endswith((".meta.yaml", ".meta.yml")):
        return False
    if "test_cases" not in text and "input" not in text and "turns" not in text:
        return False
    try:
        data = safe_yaml(text)  # a safe loader (C if available), within the YAML budget
    except Exception:  # broken YAML: claim it if it says so, so load() reports the error
        return bool(_TOP_KEY.search(text)) and NATIVE_TAG not in text
    return _claims(data)


def _claims(data: Any) -> bool:
    if isinstance(data, dict):
        if NATIVE_TAG in data or "world_state" in data or "bot_instructions" in data:
            return False
        if "test_cases_file" in data:
            return True
        return "test_cases" in data and not _thinkingbox_cases(data["test_cases"])
    if not isinstance(data, list) or _thinkingbox_cases(data):
        return False
    return any(isinstance(i, dict) and ("input" in i or "turns" in i) for i in data)


def _thinkingbox_cases(items: Any) -> bool:
    """thinkingbox's YAML cases carry `query` (and never HoloDeck's `input`/`turns`)."""
    if not isinstance(items, list):
        return False
    maps = [i for i in items if isinstance(i, dict)]
    ours = any("input" in i or "turns" in i for i in maps)
    return not ours and any("query" in i for i in maps)


@register_format(_FORMAT, (".yaml", ".yml"), sniff)
def load_yaml_cases(path: Path, text: str) -> Suite:
    """Read an agent.yaml (with its `test_cases_file`) or a payload list into a Suite."""
    try:
        return _load(path, text)
    except SuiteError:
        raise
    except Exception as exc:  # a loader raises only SuiteError
        raise SuiteError.one(
            str(path), None, "", f"internal error reading test cases: {type(exc).__name__}: {exc}"
        ) from exc


def _load(path: Path, text: str) -> Suite:
    problems = Problems(str(path))
    text = _substituted(text, problems)
    doc = yaml_with_lines(text, problems)
    if doc is None:  # not YAML (else its problems are reported with the cases')
        problems.raise_if_any()
    if isinstance(doc, dict):
        return _agent_suite(path, doc, problems)
    if isinstance(doc, list):
        ctx = CaseContext(str(path), path.parent, GraderImporter(path.parent))
        cases = _cases(doc, ctx, problems)
        problems.raise_if_any()
        return Suite(
            id=path.stem,
            name=path.stem,
            cases=cases,
            sources=[Source(file=str(path), format=_FORMAT)],
        )
    problems.add(
        1,
        "",
        "expected an agent.yaml mapping with 'test_cases' or 'test_cases_file', "
        f"or a list of test cases; got {kind_name(doc) if doc is not None else 'an empty file'}",
    )
    problems.raise_if_any()
    raise AssertionError("unreachable")


def _agent_suite(path: Path, doc: dict[Any, Any], problems: Problems) -> Suite:
    importer = GraderImporter(path.parent)
    root = At(problems, "", 1)
    ctx = CaseContext(str(path), path.parent, importer)
    ctx.agent_raw, ctx.agent_metrics = _agent_metrics(doc, root, importer)
    sources = [Source(file=str(path), format=_FORMAT)]
    all_problems = problems
    cases: list[Case] = []
    inline, ref = doc.get("test_cases"), doc.get("test_cases_file")
    if ref is not None and inline is not None:
        root.key(doc, "test_cases_file").error(
            "Cannot specify both 'test_cases' and 'test_cases_file'; choose one."
        )
    if inline is not None:
        if isinstance(inline, list):
            cases = _cases(inline, ctx, problems)
        else:
            root.key(doc, "test_cases").error(type_error("list", inline))
    elif ref is not None:
        payload = _payload(ref, root.key(doc, "test_cases_file"), path.parent)
        if payload is not None:
            file, items, payload_problems = payload
            sources.append(Source(file=file, format=_FORMAT))
            ctx.file = file
            cases = _cases(items, ctx, payload_problems)
            all_problems = Problems(str(path), [*problems, *payload_problems])
    all_problems.raise_if_any()
    name = doc.get("name")
    title = name if isinstance(name, str) and name.strip() else path.stem
    description = doc.get("description")
    return Suite(
        id=title,
        name=title,
        description=description if isinstance(description, str) else None,
        metadata={str(k): plain(v) for k, v in doc.items() if k != "test_cases"},
        cases=cases,
        sources=sources,
    )


def _substituted(text: str, problems: Problems, *, whole: bool = False) -> str:
    """The text after HoloDeck's `${VAR}` substitution (see `_yaml_common.expand_env`).

    In an agent.yaml only the test cases and `evaluations.metrics` are substituted; a
    payload file (`whole`, or a top-level list of cases) is substituted whole, as HoloDeck
    does. A file that does not parse even with the placeholders neutralised is left as is,
    so its YAML error is what gets reported.
    """
    if "${" not in text:
        return text
    shape = yaml_with_lines(masked(text), Problems(problems.file))
    if shape is None:
        return text
    agent = isinstance(shape, dict) and ("test_cases" in shape or "test_cases_file" in shape)
    whole = whole or not agent
    lines = None if whole else env_lines(shape, text.count("\n") + 1)
    expanded = expand_env(text, problems, shape, lines)
    problems.raise_if_any()
    return expanded


def _agent_metrics(doc: dict[Any, Any], root: At, importer: GraderImporter) -> tuple[Any, Any]:
    """The agent's `evaluations.metrics` (raw, parsed); only that part of the agent is checked."""
    evals = doc.get("evaluations")
    if evals is None:
        return None, None
    at = root.key(doc, "evaluations")
    if not isinstance(evals, dict):
        at.error(type_error("dictionary", evals))
        return None, None
    if "metrics" not in evals:
        at.key(evals, "metrics").error("Field required")
        return None, None
    raw = evals["metrics"]
    if isinstance(raw, list) and not raw:
        at.key(evals, "metrics").error("metrics must have at least one metric")
    return raw, parse_metrics(raw, at.key(evals, "metrics"), importer)


def _payload(ref: Any, at: At, base: Path) -> tuple[str, list[Any], Problems] | None:
    """Read a `test_cases_file`: (its path, its case list, its own problem sink)."""
    if not isinstance(ref, str) or not ref.strip():
        at.error("'test_cases_file' must be a non-empty string path.")
        return None
    ref_path = Path(ref) if Path(ref).is_absolute() else base / ref
    shown = os.path.normpath(ref_path)
    try:
        if not ref_path.is_file():  # never read a device or a FIFO (it could block)
            raise FileNotFoundError(2, "No such file")
        text = ref_path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        at.error(f"test_cases_file {shown} is not UTF-8 text: {exc.reason}")
        return None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        at.error(f"test_cases_file not found at {shown}: {getattr(exc, 'strerror', None) or exc}")
        return None
    problems = Problems(shown)
    try:
        text = _substituted(text, problems, whole=True)
    except SuiteError:
        return shown, [], problems
    data = yaml_with_lines(text, problems)
    if not data:
        return shown, [], problems
    cases = data["test_cases"] if isinstance(data, dict) and "test_cases" in data else data
    if not isinstance(cases, list):
        at.error(
            f"test_cases_file {shown} must contain a list of test cases (optionally nested "
            f"under a 'test_cases:' key); got {kind_name(cases)}."
        )
        return None
    return shown, cases, problems


def _cases(items: list[Any], ctx: CaseContext, problems: Problems) -> list[Case]:
    """Every entry of a case list; ids from names, duplicates reported with both lines."""
    lines = items.item_lines if isinstance(items, LineList) else []
    stem = Path(ctx.file).stem
    first_line: dict[str, int | None] = {}
    cases: list[Case] = []
    for j, raw in enumerate(items):
        at = At(problems, f"test_cases[{j}]", lines[j] if j < len(lines) else None)
        name = case_name(raw, At(Problems(ctx.file), at.path, at.line))  # reported by build
        case_id = name if name is not None else f"{stem}[{j}]"
        if case_id in first_line:
            what = "name" if name is not None else "id"
            at.key(raw, "name").named(name).error(
                f"duplicate test case {what} {case_id!r} at lines {first_line[case_id]} "
                f"and {at.line}"
            )
        else:
            first_line[case_id] = at.line
        case = build_case(raw, case_id, at, ctx)
        if case is not None:
            cases.append(case)
    return cases
