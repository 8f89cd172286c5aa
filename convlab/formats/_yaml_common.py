"""Shared plumbing of the HoloDeck YAML loader: where a node is, key checks, plain data.

Problems are reported with HoloDeck's own wording (its pydantic messages and its
`ConfigError` texts) so a HoloDeck user recognises them, plus a field path such as
`test_cases[0].turns[2].expected_tools[1].args.a.regex`, the line, and `[<test name>] `
in front of every problem inside a named test case.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from convlab.formats._base import (
    LineDict,
    LineList,
    Problems,
    did_you_mean,
    dotted,
    line_of,
    short_repr,
)

__all__ = [
    "HINT",
    "At",
    "check_keys",
    "env_lines",
    "expand_env",
    "kind_name",
    "masked",
    "path_at",
    "type_error",
    "validate_model",
]

M = TypeVar("M", bound=BaseModel)
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
HINT = "; did you mean {!r}?"
"""How this format words a did-you-mean (`_base.did_you_mean`'s `form`)."""


@dataclass(frozen=True)
class At:
    """Where a node sits: the problem sink, its field path, its line, the test-name prefix."""

    problems: Problems
    path: str
    line: int | None
    prefix: str = ""

    def error(self, message: str) -> None:
        """Record a problem at this node."""
        self.problems.add(self.line, self.path, self.prefix + message)

    def key(self, node: Any, key: Any) -> At:
        """The node under `key` of the mapping `node` (its line is the key's line)."""
        line = node.key_lines.get(key) if isinstance(node, LineDict) else None
        path = f"{self.path}.{key}" if self.path else str(key)
        return replace(self, path=path, line=line or self.line)

    def item(self, node: Any, index: int) -> At:
        """The `index`-th item of the sequence `node`."""
        line = None
        if isinstance(node, LineList) and 0 <= index < len(node.item_lines):
            line = node.item_lines[index]
        return replace(self, path=f"{self.path}[{index}]", line=line or self.line)

    def on_line(self, line: int | None) -> At:
        """The same path reported on another line (e.g. the line of the offending key)."""
        return replace(self, line=line or self.line)

    def named(self, name: str | None) -> At:
        """Prefix every later problem with `[<test name>] ` (HoloDeck's FR-025 wording)."""
        return replace(self, prefix=f"[{name}] " if name else "")


def check_keys(node: dict[Any, Any], allowed: tuple[str, ...], at: At) -> None:
    """Report every key of `node` outside `allowed` (HoloDeck models use extra='forbid')."""
    for key in node:
        if key not in allowed:
            hint = did_you_mean(key, allowed, HINT)
            at.key(node, key).error("Extra inputs are not permitted" + hint)


def kind_name(value: Any) -> str:
    """A YAML-level type name: dict/list for line-tracking containers, else the type's name."""
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def type_error(expected: str, value: Any) -> str:
    """Pydantic's wording for a wrong type, plus what was found (and a quoting hint)."""
    shown = short_repr(value)  # never repr() the whole value: it may be an alias bomb
    hint = ""
    if expected == "string" and value is not None and not isinstance(value, dict | list):
        hint = "; quote it in the YAML to make it a string"
    return f"Input should be a valid {expected} (got {kind_name(value)} {shown}{hint})"


def expand_env(text: str, problems: Problems, doc: Any, lines: set[int] | None = None) -> str:
    """The file text with every `${VAR}` replaced by its value, as HoloDeck loads a file.

    HoloDeck 0.7.1 (`substitute_env_vars`, config/env_loader.py) substitutes over the raw
    text before parsing, so a variable works anywhere, tool `args` included, and its value
    is parsed as YAML (`a: ${N}` with N=5 is the number 5); an unset variable is an error.
    `lines` (1-based) limits the substitution to the test-case part of an agent.yaml: the
    agent's own settings (model, api_key: ${OPENAI_API_KEY}, ...) are kept as written so
    a secret never lands in Suite.metadata or a report, and loading never needs it.
    Each unset variable is reported with its line and the path of the node written there
    (`doc` is the file parsed as written).
    """
    if "${" not in text:
        return text
    out = text.splitlines(keepends=True)
    base = "test_cases" if isinstance(doc, list) else ""  # a payload: paths as in a file
    for n, line in enumerate(out, start=1):
        if "${" not in line or (lines is not None and n not in lines):
            continue

        def value(m: re.Match[str], n: int = n) -> str:
            name = m.group(1)
            if name not in os.environ:
                problems.add(
                    n,
                    path_at(doc, n, base),
                    f"Environment variable {name!r} not found (written ${{{name}}}). "
                    "Please set it and try again.",
                )
                return m.group(0)
            return os.environ[name]

        out[n - 1] = _ENV.sub(value, line)
    return "".join(out)


def masked(text: str) -> str:
    """The text with each `${VAR}` neutralised (`$(VAR)`, same lines) so it parses as YAML.

    `{a: ${N}}` is valid YAML only after substitution; this lets the loader learn the
    file's layout (which lines hold test cases) before substituting anything.
    """
    return _ENV.sub(lambda m: f"$({m.group(1)})", text)


def env_lines(doc: Any, total: int) -> set[int]:
    """The lines of an agent.yaml that HoloDeck's `${VAR}` substitution reaches in convlab.

    They are the `test_cases` block and the `evaluations.metrics` block: a block runs from
    its key's line to the line before the next key of the same mapping (or the end of the
    enclosing block). Everything else is agent configuration, kept as written.
    """
    out: set[int] = set()
    if not isinstance(doc, LineDict):
        return out
    span = _block(doc, "test_cases", 1, total)
    if span is not None:
        out.update(range(span[0], span[1] + 1))
    evals = _block(doc, "evaluations", 1, total)
    inner = doc.get("evaluations")
    if evals is not None and isinstance(inner, LineDict):
        metrics = _block(inner, "metrics", evals[0], evals[1])
        if metrics is not None:
            out.update(range(metrics[0], metrics[1] + 1))
    return out


def _block(node: LineDict, key: str, first: int, last: int) -> tuple[int, int] | None:
    start = node.key_lines.get(key)
    if start is None:
        return None
    later = [n for n in node.key_lines.values() if n > start]
    return start, (min(later) - 1 if later else last)


def path_at(node: Any, line: int, path: str = "") -> str:
    """The field path of the deepest node written on or before `line` (for messages)."""
    best = path
    if isinstance(node, LineDict):
        for key, value in node.items():
            start = node.key_lines.get(key)
            if start is not None and start <= line:
                best = path_at(value, line, f"{path}.{key}" if path else str(key))
    elif isinstance(node, LineList):
        for i, value in enumerate(node):
            if i < len(node.item_lines) and node.item_lines[i] <= line:
                best = path_at(value, line, f"{path}[{i}]")
    return best


def validate_model(model: type[M], raw: Any, at: At) -> M | None:
    """Validate `raw` with a mirror of a HoloDeck model; report each error with path and line."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            msg = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "extra_forbidden" and loc:
                msg += did_you_mean(loc[-1], model.model_fields, HINT)
            elif err["type"] == "literal_error":
                expected = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
                msg += did_you_mean(err.get("input"), expected, HINT)
            line = line_of(raw, loc) if loc else None
            target = replace(at, path=dotted(loc, at.path), line=line or at.line)
            target.error(msg)
        return None
