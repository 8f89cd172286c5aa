"""Function agents: the history a function receives on later turns is a valid chat-completions
history (tool calls with arguments, one tool message per call), as Yao's dynamic runner appends them
says, so a function that forwards `messages` to a model API keeps working after a tool turn."""

from __future__ import annotations

import json
from typing import Any

import convlab as cl
from convlab.agents.function import to_observation
from convlab.model.suite import Case, Suite, Turn, TurnInput


def openai_history_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What a chat-completions API rejects with HTTP 400 in a history (its documented rules)."""
    problems = []
    for i, m in enumerate(messages):
        calls = m.get("tool_calls") or []
        for call in calls:
            fn = call.get("function", {})
            if not isinstance(fn.get("arguments"), str):
                problems.append(f"messages[{i}]: tool call {call.get('id')} has no arguments")
            else:
                json.loads(fn["arguments"])
        answered = []
        for follower in messages[i + 1 :]:
            if follower.get("role") != "tool":
                break
            answered.append(follower.get("tool_call_id"))
            if not isinstance(follower.get("content"), str):
                problems.append(f"tool message for {follower.get('tool_call_id')} has no content")
        for call in calls:
            if call.get("id") not in answered:
                problems.append(f"messages[{i}]: tool call {call.get('id')} has no tool message")
    return problems


def forwarding_agent(messages: list[dict[str, Any]]) -> cl.Reply:
    """Stands in for a function that sends `messages` to a model API."""
    problems = openai_history_problems(messages)
    if problems:
        raise cl.AgentHTTPError(400, "https://api.example/v1/chat/completions", "; ".join(problems))
    if len(messages) == 1:
        calls = [
            cl.ToolCall("lookup", {"city": "Oslo"}, result={"temp": 3}, id="t1"),
            cl.ToolCall("note", '{"text": "cold"}', result="saved"),
            cl.ToolCall("fail", {}, error="no such city"),
        ]
        return cl.Reply(text="It is 3 degrees.", tool_calls=calls)
    return cl.Reply(text=f"turn {sum(m['role'] == 'user' for m in messages)}")


def test_a_function_forwarding_messages_gets_a_valid_history_after_a_tool_turn() -> None:
    case = Case(
        id="weather",
        mode="turns",
        turns=[Turn(input=TurnInput(text="Weather in Oslo?")), Turn(input=TurnInput(text="And?"))],
    )
    run = cl.run(Suite(id="s", cases=[case]), forwarding_agent, progress=False)
    [row] = run.df.to_dict("records")
    assert row["status"] == "passed", row["error"]
    assert row["turns"] == 2


def test_tool_turn_messages_carry_arguments_and_results() -> None:
    reply = cl.Reply(
        text="done",
        tool_calls=[
            cl.ToolCall("lookup", {"city": "Oslo"}, result={"temp": 3}, id="t1"),
            cl.ToolCall("note", '{"text": "cold"}', result="saved"),
            cl.ToolCall("fail", {}, error="no such city"),
        ],
    )
    messages = [m.model_dump(exclude_none=True) for m in to_observation(reply).messages]
    assert messages == [
        {
            "role": "assistant",
            "content": "done",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "t1",
                    "function": {"name": "lookup", "arguments": '{"city": "Oslo"}'},
                },
                {
                    "type": "function",
                    "id": "call_1",
                    "function": {"name": "note", "arguments": '{"text": "cold"}'},
                },
                {
                    "type": "function",
                    "id": "call_2",
                    "function": {"name": "fail", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": '{"temp": 3}'},
        {"role": "tool", "tool_call_id": "call_1", "content": "saved"},
        {"role": "tool", "tool_call_id": "call_2", "content": "error: no such city"},
    ]
    assert openai_history_problems(messages) == []


def test_a_plain_reply_becomes_the_same_observation_as_a_validated_one() -> None:
    """str and dict replies become the Observation a Reply of them becomes, field for field."""
    from convlab.model.conversation import Message, Reply
    from convlab.model.records import Observation

    for value in ["hello", "", {"total": 3, "items": [1, None]}]:
        reply = Reply(text=value) if isinstance(value, str) else Reply(data=value)
        validated = Observation(
            text=reply.text,
            data=reply.data,
            tool_calls=[],
            messages=[Message(role="assistant", content=reply.text or "")],
            status=reply.status,
            interaction=reply.interaction,
            facts=list(reply.facts),
            usage=reply.usage,
            events=list(reply.events),
        )
        fast = to_observation(value)
        assert fast == validated
        assert fast.to_json() == validated.to_json()
        assert to_observation(reply) == fast
