"""Agents: functions, OpenAI-compatible endpoints, HTTP services, demo agents, simulators.

Spec strings resolve through one registry: `demo:NAME`, `openai:MODEL`, `http:URL`,
`module:function`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convlab.agents import demos
from convlab.agents.function import FunctionAgent
from convlab.agents.protocol import (
    AGENT_SPECS,
    Agent,
    AgentContext,
    AgentSession,
    agent_spec,
    as_agent,
)

if TYPE_CHECKING:
    from convlab.agents.http_agent import HTTPAgent
    from convlab.agents.openai_agent import OpenAIAgent

__all__ = [
    "AGENT_SPECS",
    "Agent",
    "AgentContext",
    "AgentSession",
    "FunctionAgent",
    "agent_spec",
    "as_agent",
    "demo",
    "demos",
    "function",
    "http",
    "openai",
    "openai_grid",
]


def function(fn: object, name: str | None = None, *, strict_input: bool = False) -> FunctionAgent:
    """Wrap a Python function `f(messages)` or `f(messages, ctx)` as an agent.

    `strict_input=True`: the function plays a kernel agent behind intention-kernel's direct
    adapter, which refuses any step input but `{text, selection?}` (`Agent.strict_input`).
    """
    if not callable(fn):
        raise TypeError(f"not callable: {fn!r}")
    return FunctionAgent(fn, name=name, strict_input=strict_input)


agent_spec("py", "python")(FunctionAgent.from_spec)


def demo(name: str) -> Agent:
    """A built-in demo agent, offline and deterministic: expense, cloud_drive, catalog, finance.

    (`convlab.agents.demos.names()` lists them.)
    """
    from convlab.agents.demos import get

    return get(name)


agent_spec("demo")(demo)


def openai(
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    system: str | None = None,
    tools: Any = None,
    **params: Any,
) -> OpenAIAgent:
    """An OpenAI-compatible chat-completions model as an agent (tool calls included).

    Unset arguments come from OPENAI_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY; `tools` are
    Python functions (run locally when the model calls them) or OpenAI tool definitions;
    `timeout` (seconds, default 60), `headers`, `adaptive` (default True: 429/503 answers
    cut the requests in flight, successes grow them back; False keeps `parallel`) and model
    parameters (temperature, ...) go in `params`.
    """
    from convlab.agents.openai_agent import OpenAIAgent

    return OpenAIAgent(model, base_url, api_key, system, tools, **params)


def _labelled(value: Any, what: str, label: Any) -> list[tuple[str, Any]]:
    """(label, value) pairs of one grid dimension: a mapping as given, a list labelled by
    `label(item, position)`, a single value (or None) as one unlabelled choice."""
    if value is None or isinstance(value, str):
        return [("", value)]
    if isinstance(value, Mapping):
        if not value:
            raise ValueError(f"openai_grid: {what} is empty")
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, Sequence):
        if not value:
            raise ValueError(f"openai_grid: {what} is empty")
        return [(label(v, i), v) for i, v in enumerate(value)]
    raise TypeError(f"openai_grid: {what} must be a list or a dict of names, got {value!r}")


def _params_label(params: Any, position: int) -> str:
    if not isinstance(params, Mapping):
        raise TypeError(f"openai_grid: params must be dicts, got {params!r}")
    return ",".join(f"{k}={v}" for k, v in params.items()) or f"params{position + 1}"


def openai_grid(
    models: str | Sequence[str] | Mapping[str, str],
    system: str | Sequence[str] | Mapping[str, str] | None = None,
    params: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]] | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    tools: Any = None,
    sep: str = "/",
    **common: Any,
) -> dict[str, OpenAIAgent]:
    """Every combination of models x system prompts x parameters as named OpenAI-compatible
    agents, ready for `cl.run(suite, grid)` (an Experiment).

    Each dimension is one value, a list or a dict of names to values. A variant's name joins,
    with `sep`, the names of the dimensions that vary: a model by its name, a prompt by its
    key (a list's prompts are `system1`, `system2`, ...), parameters by their key (a list's
    as `temperature=0`). `common` (timeout, headers, adaptive, or parameters every variant
    shares) goes to each agent; a variant's own `params` win over it.

    Example:
        >>> grid = openai_grid(["gpt-4o-mini", "gpt-4o"], {"short": "Be brief.",
        ...     "long": "Explain."}, [{"temperature": 0}], api_key="k")
        >>> list(grid)
        ['gpt-4o-mini/short', 'gpt-4o-mini/long', 'gpt-4o/short', 'gpt-4o/long']
    """
    from convlab.agents.openai_agent import OpenAIAgent

    dims = [
        _labelled(models, "models", lambda m, i: str(m)),
        _labelled(system, "system", lambda s, i: f"system{i + 1}"),
        _labelled(params if params is not None else None, "params", _params_label),
    ]
    varying = [len(d) > 1 for d in dims]
    grid: dict[str, OpenAIAgent] = {}
    for model_name, model in dims[0]:
        for prompt_name, prompt in dims[1]:
            for params_name, extra in dims[2]:
                labels = [model_name or str(model), prompt_name, params_name]
                shown = [lab for lab, vary in zip(labels, varying, strict=True) if vary]
                name = sep.join(shown) or labels[0]
                if name in grid:
                    raise ValueError(f"openai_grid: two variants would be named {name!r}")
                kwargs = {**common, **dict(extra or {})}
                grid[name] = OpenAIAgent(model, base_url, api_key, prompt, tools, **kwargs)
    return grid


def http(
    url: str,
    request: Any = None,
    response: Any = None,
    headers: Any = None,
    timeout: float = 60.0,
    adaptive: bool = True,
) -> HTTPAgent:
    """A generic JSON endpoint as an agent: a request template in, dotted paths out.

    See `convlab.agents.http_agent.HTTPAgent` for the placeholders and paths. With `adaptive`
    (the default) 429/503 answers cut the requests in flight and successes grow them back
    (AIMD, up to the run's `parallel`); False keeps `parallel` whatever the endpoint says.
    """
    from convlab.agents.http_agent import HTTPAgent

    return HTTPAgent(url, request, response, headers, timeout, adaptive)


@agent_spec("openai")
def _openai_spec(rest: str) -> Agent:
    """`openai:MODEL`; the endpoint and key come from the environment."""
    from convlab.agents.openai_agent import OpenAIAgent

    return OpenAIAgent(rest or None)


@agent_spec("http")
def _http_spec(rest: str) -> Agent:
    """`http:URL`, `http://...` or `https://...`."""
    from convlab.agents.http_agent import HTTPAgent

    if rest.startswith("//"):
        rest = "http:" + rest
    elif not rest.startswith(("http://", "https://")):
        rest = "http://" + rest
    return HTTPAgent(rest)
