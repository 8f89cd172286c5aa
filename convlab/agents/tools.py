"""Tools for model agents: a Python function becomes an OpenAI tool definition.

The JSON schema comes from the signature (type hints and defaults, through pydantic, so
`Literal`, enums, `list[int]`, optional values and models all work); the description is the
docstring's first line, and Google-style `Args:` lines describe the parameters. When the model
calls the tool, its arguments are validated against the same schema before the function runs,
so a bad call comes back to the model as an error it can correct instead of a crash.

A parameter named `ctx` (or annotated `AgentContext`) receives the case's context, so a tool
can read and change `ctx.world`.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from convlab._user_code import call_user
from convlab.agents.protocol import AgentContext
from convlab.errors import ToolFailed
from convlab.model.tracebacks import error_text

__all__ = ["Tool", "ToolFailed", "as_tools", "tool", "tool_from_function"]

_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


@dataclass
class Tool:
    """One tool a model may call: its definition and, when it has one, the local function."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments object."""
    fn: Callable[..., Any] | None = None
    """None: declared only, so the model's calls are returned to the caller, not run."""
    ctx_param: str | None = None
    args_model: type[BaseModel] | None = None
    positional: tuple[str, ...] = ()
    spec: dict[str, Any] | None = None
    """The definition as given (tools declared by a dict), sent unchanged."""

    def definition(self) -> dict[str, Any]:
        """The OpenAI `tools` entry."""
        if self.spec is not None:
            return self.spec
        spec: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            spec["description"] = self.description
        return {"type": "function", "function": spec}

    async def run(self, arguments: Any, ctx: AgentContext) -> Any:
        """Validate `arguments` and call the function (a sync one in a daemon thread, so one
        that hangs past its case's timeout does not keep the run from ending).

        Raises:
            ToolFailed: If the arguments do not fit the schema or the function raised.
        """
        if self.fn is None:
            raise ToolFailed(f"tool {self.name!r} has no local function")
        args, kwargs = self._bind(arguments, ctx)
        try:
            value = await call_user(functools.partial(self.fn, *args, **kwargs))
        except Exception as exc:
            raise ToolFailed(error_text(exc)) from exc
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        return value

    def _bind(self, arguments: Any, ctx: AgentContext) -> tuple[list[Any], dict[str, Any]]:
        if not isinstance(arguments, dict):
            raise ToolFailed(f"arguments must be a JSON object, got {arguments!r:.200}")
        if self.args_model is None:
            kwargs = dict(arguments)
        else:
            try:
                model = self.args_model.model_validate(arguments)
            except ValidationError as exc:
                raise ToolFailed(_validation_text(exc)) from None
            kwargs = {
                f.alias or name: getattr(model, name)
                for name, f in type(model).model_fields.items()
            }
            kwargs.update(model.model_extra or {})
        if self.ctx_param:
            kwargs[self.ctx_param] = ctx
        args = [kwargs.pop(name) for name in self.positional if name in kwargs]
        return args, kwargs


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's first line, and `Args:` descriptions by parameter name."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary = lines[0].strip() if lines else ""
    params: dict[str, str] = {}
    in_args = False
    for line in lines[1:]:
        if re.match(r"^\s*(Args|Arguments|Parameters)\s*:\s*$", line):
            in_args = True
            continue
        if in_args and re.match(r"^\S", line):
            in_args = False
        if in_args and (m := _ARG_LINE.match(line)):
            params[m.group(1).lstrip("*")] = m.group(2).strip()
    return summary, params


def _wants_ctx(param: inspect.Parameter, hint: Any) -> bool:
    return param.name == "ctx" or hint is AgentContext


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's generated `title`s (noise for a model); keep property names."""
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: _strip_titles(v) for k, v in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out


def _hints(fn: Callable[..., Any], sig: inspect.Signature) -> dict[str, Any]:
    """Type hints; when some cannot be resolved, each one that can (typing names included)."""
    try:
        return get_type_hints(fn)
    except Exception:
        pass
    namespace = {**vars(typing), **getattr(fn, "__globals__", {})}
    hints: dict[str, Any] = {}
    for param in sig.parameters.values():
        hint = param.annotation
        if isinstance(hint, str):
            try:
                hint = eval(hint, namespace)  # an annotation string, as get_type_hints does
            except Exception:
                hint = Any
        hints[param.name] = Any if hint is param.empty else hint
    return hints


def tool_from_function(
    fn: Callable[..., Any], name: str | None = None, description: str | None = None
) -> Tool:
    """Build a Tool from a function's signature, type hints, defaults and docstring."""
    sig = inspect.signature(fn)
    hints = _hints(fn, sig)
    summary, arg_docs = _doc_parts(fn)
    fields: dict[str, Any] = {}
    positional: list[str] = []
    ctx_param = None
    has_kwargs = False
    for i, param in enumerate(sig.parameters.values()):
        hint = hints.get(param.name, Any)
        if _wants_ctx(param, hint):
            ctx_param = param.name
            continue
        if param.kind is param.VAR_KEYWORD:
            has_kwargs = True
            continue
        if param.kind is param.VAR_POSITIONAL:
            continue
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
        default = ... if param.default is param.empty else param.default
        fields[f"p{i}"] = (
            hint,
            Field(default, alias=param.name, description=arg_docs.get(param.name)),
        )
    config = ConfigDict(extra="allow" if has_kwargs else "forbid", arbitrary_types_allowed=True)
    model = create_model(f"{getattr(fn, '__name__', 'tool')}_args", __config__=config, **fields)
    schema = _strip_titles(model.model_json_schema(by_alias=True))
    schema.setdefault("properties", {})
    if not has_kwargs:
        schema["additionalProperties"] = False
    return Tool(
        name=name or str(getattr(fn, "__name__", "tool")),
        description=description if description is not None else summary,
        parameters=schema,
        fn=fn,
        ctx_param=ctx_param,
        args_model=model,
        positional=tuple(positional),
    )


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str = ""
) -> Any:
    """Decorator: `@tool` or `@tool(name=..., description=...)` turns a function into a Tool."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return tool_from_function(f, name=name, description=description or None)

    return wrap(fn) if fn is not None else wrap


def _from_definition(spec: dict[str, Any]) -> Tool:
    """A tool given as an OpenAI definition: declared only, its calls are returned."""
    body = spec.get("function", spec)
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        raise TypeError(f"a tool definition needs a 'name': {json.dumps(spec)[:200]}")
    return Tool(
        name=body["name"],
        description=str(body.get("description") or ""),
        parameters=body.get("parameters") or {"type": "object", "properties": {}},
        spec=spec if "function" in spec else {"type": "function", "function": spec},
    )


def as_tools(tools: Iterable[Any] | None) -> dict[str, Tool]:
    """Tools by name from functions, Tool objects and OpenAI definitions (dicts).

    Raises:
        TypeError: For something that is none of these.
        ValueError: If two tools share a name.
    """
    out: dict[str, Tool] = {}
    for item in tools or ():
        if isinstance(item, Tool):
            made = item
        elif isinstance(item, dict):
            made = _from_definition(item)
        elif callable(item):
            made = tool_from_function(item)
        else:
            raise TypeError(f"not a tool: {item!r} (give a function, a dict or a Tool)")
        if made.name in out:
            raise ValueError(f"two tools are named {made.name!r}")
        out[made.name] = made
    return out
