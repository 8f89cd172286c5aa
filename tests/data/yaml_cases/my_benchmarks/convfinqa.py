"""A tiny code grader in HoloDeck's contract: called once per turn with a GraderContext."""

from __future__ import annotations

from typing import Any


def program_equivalence(ctx: Any) -> bool:
    """Pass when the agent's answer equals the turn's ground truth as a number."""
    try:
        return abs(float(ctx.agent_response) - float(ctx.ground_truth)) < 1e-3
    except (TypeError, ValueError):
        return False
