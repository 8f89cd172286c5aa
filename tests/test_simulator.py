"""User simulators: Yao's simulator prompt, the JSON reply contract (docs/yao.md), the LLM
simulator over any agent, plain simulator functions, `as_simulator`, and a dynamic case run
end to end with each."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from dynamic_expense import expense_agent, expense_case

import convlab as cl
from convlab.agents.function import FunctionAgent
from convlab.agents.protocol import AgentContext
from convlab.agents.simulator import (
    FunctionSimulator,
    LLMSimulator,
    Simulator,
    SimulatorTurn,
    as_simulator,
    parse_reply,
    simulator_prompt,
)
from convlab.errors import AgentResponseError
from convlab.model import Message, Suite


def sim_ctx(**meta: Any) -> AgentContext:
    return AgentContext(
        persona="New employee unfamiliar with expense process",
        goal="Submit a $3500 travel expense",
        instructions="(the target agent's instructions)",
        instance="case-1#0",
        metadata=meta,
    )


CONVO = [
    Message(role="user", content="I want to submit an expense"),
    Message(
        role="assistant",
        content="What type of expense?",
        tool_calls=[{"id": "c", "type": "function", "function": {"name": "list_types"}}],
    ),
    Message(role="tool", tool_call_id="c", content="[...]"),
]


def test_the_prompt_carries_persona_goal_state_conversation_and_contract():
    ctx = sim_ctx(
        turn_number=3,
        max_turns=10,
        checkpoints_reached=["ask_type"],
        checkpoints_pending=["call_create", "confirm"],
        department="sales",
    )
    system, user = simulator_prompt(CONVO, ctx)
    assert system["role"] == "system" and user["role"] == "user"
    assert "Persona: New employee unfamiliar with expense process" in system["content"]
    assert "Goal: Submit a $3500 travel expense" in system["content"]
    assert "If the goal has been achieved, set goal_achieved to true." in system["content"]
    assert '"message": "your next message as the user"' in system["content"]
    assert '"goal_achieved": true/false' in system["content"]
    assert '"reasoning": "brief explanation"' in system["content"]
    text = user["content"]
    assert "Turn 3 of 10." in text
    assert "Checkpoints reached: ask_type. Checkpoints pending: call_create, confirm." in text
    assert 'Context: {"department": "sales"}' in text
    assert (
        "User: I want to submit an expense\n"
        "Assistant: What type of expense? [used tools: list_types]" in text
    )
    assert "[...]" not in text  # tool results are the agent's business


def test_the_first_turn_prompt_asks_for_an_opening_message():
    _, user = simulator_prompt([], AgentContext())
    assert "Turn 1." in user["content"]
    assert "(no messages yet: write the user's first message)" in user["content"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"message": "hi", "goal_achieved": false, "reasoning": "r"}', ("hi", False, "r")),
        (
            '```json\n{"input": "via input", "goal_achieved": "true"}\n```',
            ("via input", True, None),
        ),
        ('Sure! {"message": "embedded"} there', ("embedded", False, None)),
        ("just some text", ("just some text", False, None)),
        ('{"a": 1}', ('{"a": 1}', False, None)),
        ('{"goal_achieved": true, "reasoning": "done"}', ("", True, "done")),
        ({"message": "from a dict", "goal_achieved": 1}, ("from a dict", True, None)),
        (SimulatorTurn("as is", True), ("as is", True, None)),
    ],
)
def test_reply_parsing(reply, expected):
    turn = parse_reply(reply)
    assert (turn.message, turn.goal_achieved, turn.reasoning) == expected


@pytest.mark.parametrize(
    "reply", ["", "   ", '{"message": "", "goal_achieved": false}', {"reasoning": "x"}, None]
)
def test_an_empty_message_is_an_error(reply):
    with pytest.raises(AgentResponseError, match=r"^simulator returned empty message$"):
        parse_reply(reply)


def test_llm_simulator_over_a_function_standing_in_for_a_model():
    seen: dict[str, Any] = {}

    def fake_llm(messages, ctx):
        seen["messages"], seen["ctx"] = messages, ctx
        return '{"message": "It was a business trip to Beijing", "goal_achieved": false}'

    sim = LLMSimulator(fake_llm)
    turn = asyncio.run(sim.simulate(CONVO, sim_ctx(turn_number=2, max_turns=5)))
    assert turn == SimulatorTurn("It was a business trip to Beijing", False, None)
    assert [m["role"] for m in seen["messages"]] == ["system", "user"]
    assert "Turn 2 of 5." in seen["messages"][1]["content"]
    ctx = seen["ctx"]
    assert ctx.instructions is None  # the target's instructions are not the simulator's
    assert ctx.instance == "case-1#0/simulator"
    assert (ctx.persona, ctx.goal) == (sim_ctx().persona, sim_ctx().goal)
    assert sim.describe().startswith("simulator(") and "fake_llm" in sim.describe()


def test_llm_simulator_reads_structured_data_and_reports_empty_messages():
    sim = LLMSimulator(lambda messages: {"message": "from data", "goal_achieved": True})
    assert asyncio.run(sim.simulate([], sim_ctx())) == SimulatorTurn("from data", True)
    silent = LLMSimulator(lambda messages: "")
    with pytest.raises(AgentResponseError, match="simulator returned empty message"):
        asyncio.run(silent.simulate([], sim_ctx()))


def test_plain_functions_are_called_with_the_conversation():
    def sync_sim(messages, ctx):
        return f"{ctx.persona} says hi after {len(messages)} messages ({messages[0]['role']})"

    async def async_sim(messages):
        return {"message": "", "goal_achieved": True, "reasoning": "done"}

    sim = as_simulator(sync_sim)
    assert isinstance(sim, FunctionSimulator)
    turn = asyncio.run(sim.simulate(CONVO, sim_ctx()))
    assert turn.message == (
        "New employee unfamiliar with expense process says hi after 3 messages (user)"
    )
    done = asyncio.run(as_simulator(async_sim).simulate(CONVO, sim_ctx()))
    assert done == SimulatorTurn("", True, "done")


def test_as_simulator_accepts_each_kind():
    class Scripted:
        async def simulate(self, messages, ctx):
            return SimulatorTurn("scripted")

    scripted = Scripted()
    assert as_simulator(scripted) is scripted
    assert isinstance(as_simulator(lambda m: "x"), FunctionSimulator)
    assert isinstance(as_simulator(FunctionAgent(lambda m: "x")), FunctionSimulator)
    assert isinstance(as_simulator("json:dumps"), FunctionSimulator)  # a module:function spec
    model = cl.agents.openai("sim-model", base_url="http://127.0.0.1:9/v1")
    llm = as_simulator(model)
    assert isinstance(llm, LLMSimulator) and llm.agent is model
    assert isinstance(llm, Simulator) and isinstance(scripted, Simulator)
    with pytest.raises(TypeError, match="not a user simulator"):
        as_simulator(42)


def dynamic_suite() -> Suite:
    return Suite(id="s", cases=[expense_case("expense")])


def test_a_dynamic_case_runs_with_a_simulator_function():
    def user(messages, ctx):
        meta = ctx.metadata
        return "I need to file an expense" if meta["turn_number"] == 1 else "Travel, $3500"

    run = cl.run(dynamic_suite(), expense_agent, simulator=user, progress=False)
    [row] = run.df.to_dict("records")
    assert row["status"] == "passed", row["error"]
    assert row["turns"] == 2


def test_a_dynamic_case_runs_with_an_llm_simulator():
    prompts: list[str] = []

    def fake_llm(messages):
        prompt = messages[-1]["content"]
        prompts.append(prompt)
        said = "Travel, $3500" if "Assistant:" in prompt else "I need to file an expense"
        return json.dumps({"message": said, "goal_achieved": False, "reasoning": "next"})

    run = cl.run(dynamic_suite(), expense_agent, simulator=LLMSimulator(fake_llm), progress=False)
    [row] = run.df.to_dict("records")
    assert row["status"] == "passed", row["error"]
    assert "Checkpoints reached: ask_type. Checkpoints pending: filed." in prompts[1]


def test_an_llm_simulator_rate_limited_or_down_once_is_retried():
    calls: list[int] = []

    def flaky_llm(messages):
        calls.append(1)
        if len(calls) in (1, 3):  # each user turn: a 429 or a 503 first, then the answer
            status = 429 if len(calls) == 1 else 503
            raise cl.AgentHTTPError(status, "https://sim.example/v1", "busy", retry_after=0)
        prompt = messages[-1]["content"]
        said = "Travel, $3500" if "Assistant:" in prompt else "I need to file an expense"
        return json.dumps({"message": said, "goal_achieved": False})

    simulator = LLMSimulator(flaky_llm)
    run = cl.run(dynamic_suite(), expense_agent, simulator=simulator, progress=False)
    [row] = run.df.to_dict("records")
    assert row["status"] == "passed", row["error"]
    assert row["turns"] == 2 and len(calls) == 4
