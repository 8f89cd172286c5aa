"""A user's own code with bugs in it, in a real file: the error tests (test_error_info.py)
check that results point at these lines. Each function marks its faulty line with `# BUG`."""

from __future__ import annotations

import re
from typing import Any


def reply(messages: list[dict[str, Any]]) -> str:
    """A function agent that reads an order number the message does not have."""
    text = str(messages[-1]["content"])
    order = re.match(r"order (\d+)", text).group(1)  # type: ignore[union-attr]  # BUG
    return f"Order {order} is on its way"


def simulator(messages: list[dict[str, Any]], ctx: Any) -> str:
    """A user simulator that reads a goal key its persona does not have."""
    goals = {"refund": "I want my money back"}
    return goals[ctx.goal]  # BUG


def before_hook(case: Any) -> None:
    """A before hook that divides by the number of the case's tags (none)."""
    share = 1 / len(case.tags)  # BUG
    del share


def judge(messages: list[dict[str, Any]]) -> str:
    """A judge that parses a score from a prompt that has none."""
    return str(int(str(messages[-1]["content"]).split("SCORE=")[1]))  # BUG


def evaluator(ctx: Any, parameters: dict[str, Any]) -> bool:
    """A custom evaluator that looks up a parameter nobody passed."""
    return bool(parameters["threshold"] < 1)  # BUG


def hostile(messages: list[dict[str, Any]]) -> str:
    """A function agent whose error message is HTML."""
    raise ValueError("<img src=x onerror=alert(1)><script>alert(2)</script>")  # BUG


def huge(messages: list[dict[str, Any]]) -> str:
    """A function agent whose error message is 20 MB."""
    raise ValueError("x" * 20_000_000)  # BUG


def chained(messages: list[dict[str, Any]]) -> str:
    """A function agent that raises a chain of 400 `raise ... from`."""
    error: Exception = KeyError("first")
    for n in range(400):
        try:
            raise error
        except Exception as exc:
            error = RuntimeError(f"step {n}")
            error.__cause__ = exc
    raise error  # BUG


class StrRaises(Exception):
    """An exception whose __str__ itself raises."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ broke")


class StrNotText(Exception):
    """An exception whose __str__ returns a number."""

    def __str__(self) -> Any:
        return 42


def unprintable(messages: list[dict[str, Any]]) -> str:
    """A function agent raising an exception that cannot say what it is."""
    raise StrRaises("lost")  # BUG


def not_text(messages: list[dict[str, Any]]) -> str:
    """A function agent raising an exception whose __str__ returns a non-str."""
    raise StrNotText("lost")  # BUG


def line_of(function: Any) -> int:
    """The line of `function`'s `# BUG` comment."""
    import inspect

    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if "# BUG" in line)
