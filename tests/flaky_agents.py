"""Seeded agents and cases whose repeated runs fork (tests/test_divergence.py and the views'
tests): an expense agent that looks the policy up at its second turn in about 60% of runs and
fails when it skips it; a greeter whose wording varies; a simulated user who opens in two ways."""

from __future__ import annotations

import random
from typing import Any

import convlab as cl
from convlab.model import Case, Suite
from convlab.model.suite import Checkpoint, SimulatorSpec

SEED = 7
LOOKUP_SHARE = 0.6


def rng(ctx: Any, seed: int = SEED) -> random.Random:
    """One generator per instance (its key), so a run's choices do not depend on timing."""
    return random.Random(f"{seed}:{ctx.instance}")


def expense_agent(messages: list[dict[str, Any]], ctx: Any) -> Any:
    """Turn 2: calls lookup_policy (about 60% of runs) or files blind; turn 3 files."""
    if ctx.turn == 0:
        return "Sure, what is the amount?"
    if ctx.turn == 1:
        if rng(ctx).random() < LOOKUP_SHARE:
            ctx.world["policy_checked"] = True
            call = cl.ToolCall("lookup_policy", {"amount": 120, "note": rng(ctx).random()})
            return cl.Reply(text="The policy allows it.", tool_calls=[call])
        return "I will file it."
    wording = rng(ctx).choice(["Filed.", "Done, it is filed.", "Your expense is filed."])
    return cl.Reply(text=wording, tool_calls=[cl.ToolCall("create_expense", {"amount": 120})])


def expense_case(case_id: str = "expense-policy") -> Case:
    """Three scripted turns; passes only when the policy was looked up (the world says so)."""
    return Case(
        id=case_id,
        mode="turns",
        turns=[
            {"input": {"text": "I want to file an expense"}},
            {"input": {"text": "It is 120 dollars for a team dinner"}},
            {
                "input": {"text": "Please file it"},
                "assertions": [{"kind": "tool_called", "value": "create_expense"}],
            },
        ],
        assertions=[
            {
                "kind": "check",
                "path": ["effects", "policy_checked"],
                "operator": "equals",
                "value": True,
            }
        ],
    )


def greeter(messages: list[dict[str, Any]], ctx: Any) -> str:
    """Greets in one of three wordings; every one of them offers help."""
    return rng(ctx).choice(["Hello! How can I help?", "Hi, how can I help you?", "Hey, help?"])


def greet_case(case_id: str = "greet", word: str = "help") -> Case:
    return Case(
        id=case_id,
        input=[{"role": "user", "content": "hi"}],
        assertions=[{"kind": "contains", "value": word}],
    )


def opener(messages: list[dict[str, Any]], ctx: Any) -> Any:
    """A simulated user who names the expense type at once in half the runs and stays vague
    in the other half, then says the type."""
    said = sum(m["role"] == "assistant" for m in messages)
    if said == 0:
        return "I need to file a travel expense" if rng(ctx, 3).random() < 0.5 else "I need help"
    return "It is a travel expense."


def filer(messages: list[dict[str, Any]]) -> str:
    """Files once the user names travel; asks the type before."""
    return "Expense filed." if "travel" in messages[-1]["content"].lower() else "Which type?"


def dynamic_case(case_id: str = "dynamic-expense", max_turns: int = 1) -> Case:
    """The agent must file within `max_turns`: a vague opener leaves it one turn short."""
    return Case(
        id=case_id,
        mode="dynamic",
        limits={"max_turns": max_turns},
        simulator=SimulatorSpec(persona="New employee", goal="file a travel expense"),
        checkpoints=[Checkpoint(id="filed", assertion={"kind": "contains", "value": "filed"})],
    )


def flaky_agent(messages: list[dict[str, Any]], ctx: Any) -> Any:
    """`greeter` for the greeting cases, `expense_agent` for the others."""
    if ctx.case is not None and ctx.case.id.startswith("greet"):
        return greeter(messages, ctx)
    return expense_agent(messages, ctx)


def flaky_suite() -> Suite:
    return Suite(id="flaky", cases=[expense_case(), greet_case()])
