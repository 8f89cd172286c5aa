"""The dynamic case the user-simulator tests drive (test_simulator, test_cache): a new
employee files a $3500 travel expense; the agent first asks which type, then files it once
the user says "travel". Two checkpoints, in order, see both replies."""

from __future__ import annotations

from typing import Any

from convlab.model import Case
from convlab.model.suite import Checkpoint, SimulatorSpec


def expense_case(case_id: str = "expense") -> Case:
    """A dynamic case: checkpoint `ask_type` (the agent asks the type), then `filed`."""
    return Case(
        id=case_id,
        mode="dynamic",
        simulator=SimulatorSpec(persona="New employee", goal="file a $3500 travel expense"),
        checkpoints=[
            Checkpoint(id="ask_type", assertion={"kind": "contains", "value": "type"}),
            Checkpoint(
                id="filed", after=["ask_type"], assertion={"kind": "contains", "value": "filed"}
            ),
        ],
    )


def expense_agent(messages: list[dict[str, Any]]) -> str:
    """Files the expense once the last message names travel; asks for the type before."""
    last = messages[-1]["content"].lower()
    return "Expense filed." if "travel" in last else "Which type of expense is it?"
