"""Agents: functions, OpenAI-compatible endpoints, HTTP services, demo agents, simulators.

Spec strings resolve through one registry: `demo:NAME`, `openai:MODEL`, `http:URL`,
`module:function`.
"""

from __future__ import annotations

from convlab.agents.function import FunctionAgent
from convlab.agents.protocol import (
    AGENT_SPECS,
    Agent,
    AgentContext,
    AgentSession,
    agent_spec,
    as_agent,
)

__all__ = [
    "AGENT_SPECS",
    "Agent",
    "AgentContext",
    "AgentSession",
    "FunctionAgent",
    "agent_spec",
    "as_agent",
    "function",
]


def function(fn: object, name: str | None = None) -> FunctionAgent:
    """Wrap a Python function `f(messages)` or `f(messages, ctx)` as an agent."""
    if not callable(fn):
        raise TypeError(f"not callable: {fn!r}")
    return FunctionAgent(fn, name=name)


agent_spec("py", "python")(FunctionAgent.from_spec)
