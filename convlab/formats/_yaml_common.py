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

from convlab.formats._base import LineDict, LineList, Problems, did_you_mean, dotted, line_of

__all__ = [
    "HINT",
    "At",
    "check_keys",
    "expand_env",
    "kind_name",
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
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    hint = ""
    if expected == "string" and value is not None and not isinstance(value, dict | list):
        hint = "; quote it in the YAML to make it a string"
    return f"Input should be a valid {expected} (got {kind_name(value)} {shown}{hint})"


def expand_env(text: str) -> str:
    """Replace `${VAR}` by the variable's value when it is set; keep it as written otherwise.

    HoloDeck substitutes variables in the whole file and fails on unset ones; convlab does it
    only in test-case texts (inputs, ground truths, retrieval context, file paths), so a
    secret never lands in suite metadata and loading never depends on the environment.
    """
    if "${" not in text:
        return text
    return _ENV.sub(lambda m: os.environ.get(m.group(1), m.group(0)), text)


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
