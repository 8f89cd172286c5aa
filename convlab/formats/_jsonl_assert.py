"""Yao (`yao agent test`) assertions -> convlab assertion specs.

Both spellings Yao's documents and Yao's code use are read (docs/yao.md):
regex `value` | `pattern`, tool_called `value` | `name` (+ `arguments`), script `script` |
`use`. A missing or empty `type` means `equals`; a bare string is a type with no value
(`"contains"` checks for "" and always passes, as in Yao). A type that is not built in is a
user evaluator when one is registered under that name (`@convlab.evaluator`), otherwise a
problem with a did-you-mean. Keys a type does not read are problems too: Yao ignores them,
so a typo such as `valeu` would otherwise silently turn a check into one that always passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from convlab._readable import json_type
from convlab.formats._base import Problems, did_you_mean, dotted
from convlab.model.assertions import (
    EVALUATORS,
    AgentValidator,
    Assertion,
    Contains,
    Custom,
    Equals,
    JsonPath,
    NotContains,
    Regex,
    Script,
    ToolCalled,
    ToolResult,
    TypeOf,
)

__all__ = ["BUILTIN_TYPES", "assertion_from", "assertions_from", "parse_jsonl_assertion"]

_COMMON = frozenset({"type", "message", "negate", "label", "id"})
_FIELDS: dict[str, frozenset[str]] = {
    "equals": frozenset({"value"}),
    "contains": frozenset({"value"}),
    "not_contains": frozenset({"value"}),
    "regex": frozenset({"value", "pattern"}),
    "json_path": frozenset({"path", "value"}),
    "type": frozenset({"value", "path"}),
    "tool_called": frozenset({"value", "name", "arguments"}),
    "tool_result": frozenset({"value"}),
    "script": frozenset({"script", "use", "value", "options"}),
    "agent": frozenset({"use", "value", "options"}),
}
_ALLOWED = {name: fields | _COMMON for name, fields in _FIELDS.items()}
BUILTIN_TYPES = tuple(_FIELDS)
"""The assertion types Yao defines."""
_JSON_TYPES = ("null", "string", "number", "boolean", "array", "object")
_SIMPLE: dict[str, type[Equals | Contains | NotContains]] = {
    "equals": Equals,
    "contains": Contains,
    "not_contains": NotContains,
}
_VALUE_ONLY = frozenset({"type", "value"})

Built = tuple[type[BaseModel], dict[str, Any], dict[str, str]] | None
"""(spec class, its fields, {spec field: JSON key written}) or None after a problem."""


class _At:
    """Where an assertion is: problems go to `problems` at `line`, under field path `path`."""

    __slots__ = ("line", "path", "problems")

    def __init__(self, problems: Problems, line: int | None, path: str) -> None:
        self.problems, self.line, self.path = problems, line, path

    def add(self, key: str, message: str) -> None:
        self.problems.add(self.line, f"{self.path}.{key}" if key else self.path, message)


def parse_jsonl_assertion(
    obj: Any, *, file: str = "<check>", line: int | None = None, path: str = "assert"
) -> Assertion:
    """One assertion written in Yao's JSONL spelling (`{"type": "contains", "value": ...}`).

    Raises:
        SuiteError: With every problem in the assertion, each at `file:line` and a field
            path under `path` (e.g. `assert.value`).
    """
    problems = Problems(file)
    spec = assertion_from(obj, problems, line, path)
    problems.raise_if_any()
    assert spec is not None
    return spec


def assertions_from(value: Any, problems: Problems, line: int | None, path: str) -> list[Assertion]:
    """The `assert` field: one assertion object, a list of them, or a bare type name."""
    if value is None:
        return []
    if isinstance(value, dict | str):
        one = assertion_from(value, problems, line, path)
        return [one] if one is not None else []
    if not isinstance(value, list):
        problems.add(
            line,
            path,
            f"must be an assertion object, a list of them or a type name, got {json_type(value)}",
        )
        return []
    out = []
    for i, item in enumerate(value):
        one = assertion_from(item, problems, line, f"{path}[{i}]")
        if one is not None:
            out.append(one)
    return out


def assertion_from(obj: Any, problems: Problems, line: int | None, path: str) -> Assertion | None:
    """One assertion (object or bare type name); None after recording its problems."""
    at = _At(problems, line, path)
    if isinstance(obj, str):
        obj = {"type": obj}
    elif not isinstance(obj, dict):
        at.add("", f"an assertion must be an object or a type name, got {json_type(obj)}")
        return None
    kind = obj.get("type")
    if kind is None or kind == "":
        kind = "equals"
    simple = _SIMPLE.get(kind) if isinstance(kind, str) else None
    if simple is not None and obj.keys() <= _VALUE_ONLY:  # the common case, fast
        return simple(value=obj.get("value"))
    if not isinstance(kind, str):
        at.add("type", f"assertion type must be a string, got {json_type(kind)}")
        return None
    if kind not in _FIELDS:
        return _custom(kind, obj, at)
    before = len(problems.items)
    _unknown_keys(kind, obj, at)
    common = _common(obj, at)
    built = _BUILDERS[kind](obj, at)
    if built is None or common is None or len(problems.items) > before:
        return None
    cls, fields, rename = built
    try:
        return cls(**common, **fields)  # type: ignore[return-value]
    except ValidationError as exc:
        _add_validation(exc, at, rename)
        return None


def _add_validation(exc: ValidationError, at: _At, rename: dict[str, str]) -> None:
    """Model errors with their JSON key paths (e.g. Regex.pattern written as `value`)."""
    for err in exc.errors():
        loc = [p for p in err["loc"] if not (isinstance(p, str) and "[" in p and "(" in p)]
        if loc and isinstance(loc[0], str):
            loc[0] = rename.get(loc[0], loc[0])
        at.problems.add(at.line, dotted(loc, at.path), err["msg"].removeprefix("Value error, "))


def _unknown_keys(kind: str, obj: dict[str, Any], at: _At) -> None:
    allowed = _ALLOWED[kind]
    for key in obj:
        if key in allowed:
            continue
        hint = did_you_mean(key, allowed)
        names = ", ".join(sorted(allowed))
        at.add(key, f"unknown field {key!r} for a {kind!r} assertion.{hint} (fields: {names})")


def _common(obj: dict[str, Any], at: _At) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    ok = True
    negate = obj.get("negate")
    if negate is not None:
        if isinstance(negate, bool):
            out["negate"] = negate
        else:
            at.add("negate", f"'negate' must be true or false, got {json_type(negate)}")
            ok = False
    for key in ("message", "label", "id"):
        value = obj.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            out[key] = value
        else:
            at.add(key, f"{key!r} must be a string, got {json_type(value)}")
            ok = False
    return out if ok else None


def _custom(kind: str, obj: dict[str, Any], at: _At) -> Assertion | None:
    """A type that is not built in: a registered evaluator, or a problem with a hint."""
    if kind in EVALUATORS:
        common = _common(obj, at)
        if common is None:
            return None
        params = {k: v for k, v in obj.items() if k not in _COMMON}
        return Custom(evaluator=kind, parameters=params, **common)
    known = sorted({*BUILTIN_TYPES, *EVALUATORS})
    hint = did_you_mean(kind, known) or (
        f" Known types: {', '.join(known)} (or register one with @convlab.evaluator)."
    )
    at.add("type", f"unknown assertion type {kind!r}.{hint}")
    return None


def _one_of(obj: dict[str, Any], keys: tuple[str, str], at: _At) -> str | None:
    """Which of two spellings is used; both with different values is a problem."""
    first, second = keys
    if first in obj and second in obj and obj[first] != obj[second]:
        at.add(second, f"give either {first!r} or {second!r}, not both")
        return None
    return first if first in obj or second not in obj else second


def _equals(obj: dict[str, Any], at: _At) -> Built:
    return Equals, {"value": obj.get("value")}, {}


def _contains(obj: dict[str, Any], at: _At) -> Built:
    return Contains, {"value": obj.get("value")}, {}


def _not_contains(obj: dict[str, Any], at: _At) -> Built:
    return NotContains, {"value": obj.get("value")}, {}


def _regex(obj: dict[str, Any], at: _At) -> Built:
    key = _one_of(obj, ("value", "pattern"), at)
    if key is None:
        return None
    pattern = obj.get(key)
    if not isinstance(pattern, str):
        at.add(key, f"regex pattern must be a string, got {json_type(pattern)}")
        return None
    return Regex, {"pattern": pattern}, {"pattern": key}


def _json_path(obj: dict[str, Any], at: _At) -> Built:
    path = obj.get("path", "")
    if not isinstance(path, str):
        at.add("path", f"'path' must be a string, got {json_type(path)}")
        return None
    return JsonPath, {"path": path, "value": obj.get("value")}, {}


def _type_of(obj: dict[str, Any], at: _At) -> Built:
    value, path = obj.get("value"), obj.get("path")
    ok = True
    if value not in _JSON_TYPES:
        got = repr(value) if isinstance(value, str) else json_type(value)
        at.add("value", f"type assertion value must be one of {', '.join(_JSON_TYPES)}; got {got}")
        ok = False
    if path is not None and not isinstance(path, str):
        at.add("path", f"'path' must be a string, got {json_type(path)}")
        ok = False
    return (TypeOf, {"value": value, "path": path}, {}) if ok else None


def _tool_called(obj: dict[str, Any], at: _At) -> Built:
    key = _one_of(obj, ("value", "name"), at)
    if key is None:
        return None
    value, args = obj.get(key), obj.get("arguments")
    if args is not None:
        if not isinstance(args, dict):
            at.add("arguments", f"'arguments' must be an object, got {json_type(args)}")
            return None
        if not isinstance(value, str):
            at.add("arguments", "'arguments' goes with a tool name given as a string")
            return None
        value = {"name": value, "arguments": args}
    if not _tool_value_ok(value):
        at.add(
            key,
            "tool_called needs a tool name, a list of names or {name, arguments}; "
            f"got {json_type(value)}",
        )
        return None
    return ToolCalled, {"value": value}, {"value": key}


def _tool_value_ok(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value)
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) and v for v in value)
    if isinstance(value, dict):
        name, args = value.get("name"), value.get("arguments")
        return (
            isinstance(name, str)
            and bool(name)
            and (args is None or isinstance(args, dict))
            and value.keys() <= {"name", "arguments"}
        )
    return False


def _tool_result(obj: dict[str, Any], at: _At) -> Built:
    value = obj.get("value")
    if not isinstance(value, dict):
        at.add("value", f"tool_result needs 'value': {{tool, result?}}, got {json_type(value)}")
        return None
    extra = sorted(value.keys() - {"tool", "result"})
    for key in extra:
        hint = did_you_mean(key, ("tool", "result"))
        at.add(f"value.{key}", f"unknown field {key!r} (tool_result reads tool and result).{hint}")
    tool = value.get("tool")
    if not isinstance(tool, str) or not tool:
        at.add("value.tool", "tool_result needs the tool name in 'value.tool'")
        return None
    if extra:
        return None
    fields = {"tool": tool, "result": value.get("result"), "has_result": "result" in value}
    return ToolResult, fields, {"tool": "value.tool", "result": "value.result"}


def _options(obj: dict[str, Any], at: _At) -> dict[str, Any] | None:
    options = obj.get("options")
    if options is None:
        return {}
    if not isinstance(options, dict):
        at.add("options", f"'options' must be an object, got {json_type(options)}")
        return None
    return options


def _script(obj: dict[str, Any], at: _At) -> Built:
    key = _one_of(obj, ("script", "use"), at)
    options = _options(obj, at)
    if key is None or options is None:
        return None
    name = obj.get(key)
    if not isinstance(name, str) or not name:
        at.add(key, "script assertion requires a script name")
        return None
    fields = {"script": name, "value": obj.get("value"), "options": options}
    return Script, fields, {"script": key}


def _agent(obj: dict[str, Any], at: _At) -> Built:
    options = _options(obj, at)
    use = obj.get("use")
    if use is not None and (not isinstance(use, str) or not use):
        at.add("use", "'use' must name the validator agent, e.g. 'agents:workers.test.validator'")
        return None
    if options is None:
        return None
    return AgentValidator, {"use": use, "value": obj.get("value"), "options": options}, {}


_BUILDERS: dict[str, Callable[[dict[str, Any], _At], Built]] = {
    "equals": _equals,
    "contains": _contains,
    "not_contains": _not_contains,
    "regex": _regex,
    "json_path": _json_path,
    "type": _type_of,
    "tool_called": _tool_called,
    "tool_result": _tool_result,
    "script": _script,
    "agent": _agent,
}
