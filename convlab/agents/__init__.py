"""Agents: functions, OpenAI-compatible endpoints, HTTP services, demo agents, simulators.

Spec strings resolve through one registry: `demo:NAME`, `openai:MODEL`, `http:URL`,
`module:function`.
"""

from __future__ import annotations

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
