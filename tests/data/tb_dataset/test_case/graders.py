"""Helpers shared by the test files: an ordinary module, never a test file."""

SHOUT = "!important"


def grade(x) -> float:
    """Score 1 when the agent answered at all."""
    note = "!not a YAML docstring: it is not the first statement"
    return 1.0 if x.response and note else 0.0


async def agrade(x) -> float:
    """!
    query: an async function is never a test
    """
    return 1.0
