"""Reading a thinkingbox test file (`.py`) with `ast`, never importing or running it.

Module-level strings starting with `!` are YAML merged, in file order, into a running global
config; a top-level `def` whose first statement is such a string is a test, configured by the
globals ABOVE it updated by its own YAML (thinkingbox's `iter_test_functions`). Each test's
`test_code` is the whole file with every other test function blanked, so tracebacks point at
real lines."""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from dataclasses import dataclass, field
from typing import Any

from convlab.formats._base import LineDict, LineList, Problems, yaml_with_lines

__all__ = [
    "CONFIG_FIELDS",
    "DocYaml",
    "ParsedFile",
    "TestFunction",
    "is_bang_string",
    "kind_of",
    "parse_python",
    "parse_test_file",
    "quiet_parse",
    "yaml_line",
]

CONFIG_FIELDS = (
    "scenario",
    "query",
    "user_context",
    "max_user_sim_turns",
    "max_agent_sim_turns",
    "bot_instructions",
    "history",
    "init",
    "format_query",
    "tags",
)
"""Keys a test function's own `!` YAML may hold (thinkingbox's `CONFIG_FIELDS`)."""

OVERLAP = "multiple statements overlap or are on the same line in the global scope"

Loc = tuple[int | str, ...]


def yaml_line(node: Any, loc: Loc) -> int | None:
    """The YAML line of the deepest key or item reachable along `loc` (1-based)."""
    line: int | None = getattr(node, "line", None) or None
    for part in loc:
        if isinstance(node, LineDict) and part in node:
            key_lines: dict[Any, int] = node.key_lines
            line = key_lines.get(part, line)
            node = node[part]  # type: ignore[index]
        elif isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
    return line


@dataclass(frozen=True)
class DocYaml:
    """One parsed `!` string: its data and the file line of its YAML line 1."""

    data: Any
    lines: tuple[int, ...]
    """The file line of each line of the string's value (escaped newlines counted)."""

    def line(self, loc: Loc) -> int:
        """File line of the key or item at `loc` inside this string."""
        return self.at(yaml_line(self.data, loc))

    def at(self, yaml_line: int | None) -> int:
        """File line of a (1-based) line of the YAML text."""
        return self.lines[min(max((yaml_line or 1) - 1, 0), len(self.lines) - 1)]


@dataclass
class TestFunction:
    """A test function found in a file, with its merged config and where each key came from."""

    name: str
    line: int
    """Line of the `def`."""
    span: tuple[int, int]
    """First line (decorators included) and last line of the function."""
    config: dict[Any, Any]
    origins: dict[Any, DocYaml]
    """For each top-level key, the `!` string that set it (for error lines)."""

    def line_at(self, loc: Loc) -> int:
        """File line of a config field path; the `def` line when the key is not written."""
        if loc and loc[0] in self.origins:
            return self.origins[loc[0]].line(loc)
        return self.line


@dataclass
class ParsedFile:
    """Every test of one file, plus what is needed to cut out each one's `test_code`."""

    lines: list[str]
    tests: list[TestFunction] = field(default_factory=list)
    global_config: dict[Any, Any] = field(default_factory=dict)

    def test_code(self, keep: TestFunction) -> str:
        """The source with every test function but `keep` blanked to "" (line numbers kept)."""
        out = list(self.lines)
        for test in self.tests:
            if test is not keep:
                for i in range(test.span[0] - 1, min(test.span[1], len(out))):
                    out[i] = ""
        return "\n".join(out)


def is_bang_string(node: ast.stmt) -> bool:
    """True for an expression statement that is a string constant starting with `!`."""
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and node.value.value.startswith("!")
    )


def quiet_parse(text: str) -> ast.Module:
    """`ast.parse` without the warnings (invalid escapes, ...) that belong to the file's owner."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def parse_python(text: str, problems: Problems) -> ast.Module | None:
    """`ast.parse`, with a syntax error (or a parser limit) recorded as a problem."""
    try:
        return quiet_parse(text)
    except SyntaxError as exc:
        problems.add(exc.lineno, "", f"invalid Python: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:
        problems.add(None, "", f"invalid Python: {exc or type(exc).__name__}")
    return None


def parse_test_file(text: str, problems: Problems) -> ParsedFile | None:
    """Find every test function of a file; None when the file is not valid Python."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    tree = parse_python(text, problems)
    if tree is None:
        return None
    parsed = ParsedFile(lines=text.split("\n"))
    origins: dict[Any, DocYaml] = {}
    seen: dict[str, int] = {}
    """Index in `parsed.tests` of each test name."""
    last_end = 0
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in _decorators(node))])
        if first <= last_end:
            problems.add(node.lineno, "", OVERLAP)
        last_end = max(last_end, node.end_lineno or node.lineno)
        if is_bang_string(node):
            doc = _doc_yaml(node, parsed.lines, problems, "module-level `!` string")
            if doc is not None:
                parsed.global_config.update(doc.data)
                origins.update(dict.fromkeys(doc.data, doc))
        elif isinstance(node, ast.FunctionDef) and node.body and is_bang_string(node.body[0]):
            test = _test_function(node, first, parsed, origins, problems)
            if test is None:
                continue
            if test.name in seen:
                # as thinkingbox's `iter_test_functions` (a dict by name): the later definition
                # is the test, in the earlier one's place, and the earlier `def` stays in the
                # code as a plain function
                parsed.tests[seen[test.name]] = test
            else:
                seen[test.name] = len(parsed.tests)
                parsed.tests.append(test)
    return parsed


def _decorators(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.decorator_list
    return []


def _test_function(
    node: ast.FunctionDef,
    first: int,
    parsed: ParsedFile,
    global_origins: dict[Any, DocYaml],
    problems: Problems,
) -> TestFunction | None:
    global_config = parsed.global_config
    doc = _doc_yaml(node.body[0], parsed.lines, problems, f"the `!` docstring of {node.name}")
    if doc is None:
        return None  # empty YAML: a helper, as in thinkingbox (or a problem already recorded)
    local: dict[Any, Any] = doc.data
    for key in local:
        if key not in CONFIG_FIELDS:
            problems.add(doc.line((key,)), str(key), f"YAML config contains invalid key: {key!r}")
    config = {**global_config, **local}
    if isinstance(global_config.get("tags"), list) and isinstance(local.get("tags"), list):
        config["tags"] = [*global_config["tags"], *local["tags"]]
    origins = {**global_origins, **dict.fromkeys(local, doc)}
    end = node.end_lineno or node.lineno
    return TestFunction(node.name, node.lineno, (first, end), config, origins)


def _doc_yaml(node: ast.stmt, lines: list[str], problems: Problems, where: str) -> DocYaml | None:
    """Parse one `!` string as YAML; None when it is empty or has a problem (recorded)."""
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    value = str(node.value.value)
    local = Problems(problems.file)
    data: Any = None
    try:
        data = yaml_with_lines(textwrap.dedent(value[1:]), local)
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp out of range
        local.add(None, "", f"invalid YAML: {exc}")
    except RecursionError:
        local.add(None, "", "invalid YAML: nested too deeply")
    doc = DocYaml(data, _line_map(lines, node.value, value))
    for p in local:
        problems.add(doc.at(p.line), p.path, f"{where}: {p.message}")
    if data is None:  # not YAML (text that is not Unicode is mended: the rest is checked)
        return None
    if not isinstance(data, dict):
        problems.add(node.lineno, "", f"{where} must be a YAML mapping, got {kind_of(data)}")
        return None
    return doc


_ESCAPED_NL = re.compile(r"(?<!\\)(?:\\\\)*\\n")
_CONTINUED = re.compile(r"(?<!\\)(?:\\\\)*\\$")


def _line_map(lines: list[str], node: ast.expr, value: str) -> tuple[int, ...]:
    """The file line of each line of a string constant's value.

    A `\\n` escape starts a new value line on the same file line, and a backslash at the end
    of a line joins two file lines, so YAML line numbers are mapped through the source text
    (raw strings have neither). Anything else unusual falls back to one line per line.
    """
    first, last = node.lineno, node.end_lineno or node.lineno
    segments = []
    for n in range(first, min(last, len(lines)) + 1):
        raw = lines[n - 1].encode()
        end = node.end_col_offset if n == last and node.end_col_offset is not None else None
        segments.append(raw[node.col_offset if n == first else 0 : end].decode(errors="replace"))
    prefix = re.match(r"[A-Za-z]*", segments[0]) if segments else None
    is_raw = prefix is None or "r" in prefix.group().lower()
    out = [first]
    for i, segment in enumerate(segments):
        if not is_raw:
            out.extend([first + i] * len(_ESCAPED_NL.findall(segment)))
        if first + i < last and (is_raw or not _CONTINUED.search(segment)):
            out.append(first + i + 1)
    if len(out) != value.count("\n") + 1:
        return tuple(min(first + i, last) for i in range(value.count("\n") + 1))
    return tuple(out)


def kind_of(value: Any) -> str:
    """A value's YAML type in words, for error messages."""
    for kind, name in (
        (bool, "a boolean"),
        (int | float, "a number"),
        (str, "a string"),
        (list, "a list"),
        (dict, "a mapping"),
    ):
        if isinstance(value, kind):
            return name
    return "null" if value is None else f"a {type(value).__name__}"
