"""Demo agent `finance`: answers ConvFinQA-style questions from a small built-in table.

A demo, not a product: rules instead of a model, so it runs offline and answers the same
way every time. It reads figures with `lookup_figure(metric, period)` and computes with
`add`, `subtract` and `divide` (numeric arguments `a`, `b`), answering with the bare number
as ConvFinQA does ("206588", "25587", "0.14136") so HoloDeck's numeric and equality metrics
can grade it. Follow-up questions ("what about in 2008?", "what is the difference?", "what
percentage change does this represent?") refer to the earlier answers of the conversation,
which the agent replays from the visible user messages, so a history sent in one call and
the same turns sent one by one give the same answers.

Operands: "the difference" = the earlier of the last two figures read minus the later one
(HoloDeck's ConvFinQA example: 206588 - 181001); "between 2009 and 2008" = the years in the
order written; "from 2008 to 2009" = 2009's figure minus 2008's; "subtract X from Y" = Y - X;
"percentage change" = the last difference divided by the figure it was taken from
(25587 / 181001 = 0.14136).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from convlab.agents.demos._base import Answer, Chat, DemoAgent, DemoSession, Turn, format_number

__all__ = ["DEFAULT_TABLE", "FinanceAgent"]

DEFAULT_TABLE: dict[str, dict[str, Any]] = {
    "net cash from operating activities": {
        "aliases": ["net cash from operating activities", "operating cash flow", "operating cash"],
        "values": {"2009": 206588, "2008": 181001},
        "source": "the ConvFinQA conversation of HoloDeck's multi-turn test-case contract",
    },
    "minimum lease payments": {
        "aliases": ["minimum lease payments", "lease payments", "minimum lease"],
        "values": {"2003": 83, "2004": 78, "total": 464},
        "source": "Apple 2002 annual report, page 63 (ConvFinQA Double_AAPL/2002/page_63)",
    },
}
"""Metric -> aliases, values by period (a year or "total") and source; a case may replace it
with `world["finance"]["table"]`."""

_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?%?")
_PCT_CHANGE = re.compile(
    r"percent(age)? (change|increase|decrease)|growth rate|change .*represent", re.I
)
_SUBTRACT = re.compile(r"\b(difference|subtract|minus|change|decrease|increase)\b", re.I)
_ADD = re.compile(r"\b(sum|add|plus|combined|together)\b", re.I)
_DIVIDE = re.compile(
    r"\b(portion|proportion|ratio|share|fraction|divide|divided|percent(age)? of)\b", re.I
)


def _numbers(text: str) -> list[float]:
    """Numbers written in the text that are not years (206,588 -> 206588; 14.1% -> 0.141)."""
    out: list[float] = []
    for raw in _NUMBER.findall(text):
        if _YEAR.fullmatch(raw):
            continue
        value = float(raw.rstrip("%").replace(",", ""))
        out.append(value / 100 if raw.endswith("%") else value)
    return out


def _num(value: float) -> int | float:
    """Integral floats as ints, so tool arguments read 206588 rather than 206588.0."""
    return int(value) if float(value).is_integer() else value


@dataclass
class _State:
    """What the conversation has established so far."""

    metric: str | None = None
    answers: list[float] = field(default_factory=list)
    figures: list[float] = field(default_factory=list)
    """Figures read from the table, in order (the default operands of a calculation)."""
    subtraction: tuple[float, float] | None = None
    difference: float | None = None


class _Calculator:
    """Answers one question; `turn` is None while replaying earlier questions (no records)."""

    def __init__(self, table: dict[str, dict[str, Any]], state: _State, turn: Turn | None):
        self.table, self.state, self.turn = table, state, turn

    def tool(self, name: str, result: Any, **arguments: Any) -> Any:
        if self.turn is not None:
            self.turn.tool(name, result, **arguments)
            self.turn.world["finance"]["calculations"].append(
                {"tool": name, "arguments": arguments, "result": result}
            )
        return result

    def ask(self, text: str) -> float | str:
        """A number, or the text explaining why there is none."""
        self.state.metric = self._metric(text) or self.state.metric
        if _PCT_CHANGE.search(text):
            return self._percentage_change()
        if _DIVIDE.search(text):
            return self._binary("divide", self._operands(text, "divide"))
        if _ADD.search(text):
            return self._binary("add", self._operands(text, "add"))
        if _SUBTRACT.search(text):
            return self._binary("subtract", self._operands(text, "subtract"))
        return self._lookup(text)

    def _metric(self, text: str) -> str | None:
        lowered = text.lower()
        for name, row in self.table.items():
            if any(alias in lowered for alias in row.get("aliases", [name])):
                return name
        return None

    def _periods(self, text: str) -> list[str]:
        periods = _YEAR.findall(text)
        return [*periods, "total"] if re.search(r"\btotal\b", text, re.I) else periods

    def _value(self, period: str) -> float | None:
        metric = self.state.metric
        if metric is None or period not in self.table[metric]["values"]:
            return None
        value = float(self.table[metric]["values"][period])
        self.state.figures.append(value)
        return float(self.tool("lookup_figure", _num(value), metric=metric, period=period))

    def _lookup(self, text: str) -> float | str:
        periods = self._periods(text)
        if self.state.metric is None or not periods:
            return self._unknown()
        value = self._value(periods[0])
        return self._unknown(periods[0]) if value is None else value

    def _operands(self, text: str, op: str) -> tuple[float, float] | None:
        nums, answers, figures = _numbers(text), self.state.answers, self.state.figures
        if op == "subtract" and len(nums) >= 2 and re.search(r"\bsubtract\b.*\bfrom\b", text):
            return nums[1], nums[0]
        if len(nums) >= 2:
            return nums[0], nums[1]
        if len(nums) == 1 and answers:
            return answers[-1], nums[0]
        periods = self._periods(text)
        if len(periods) >= 2:
            if re.search(r"\bfrom\b.*\bto\b", text):  # "change from 2008 to 2009": later - earlier
                periods = periods[1::-1]
            a, b = self._value(periods[0]), self._value(periods[1])
            return (a, b) if a is not None and b is not None else None
        return (figures[-2], figures[-1]) if len(figures) >= 2 else None

    def _binary(self, op: str, operands: tuple[float, float] | None) -> float | str:
        if operands is None:
            return "Which two figures should I use? Ask for them first."
        a, b = operands
        if op == "divide" and b == 0:
            return "I can't divide by zero."
        raw = {"add": a + b, "subtract": a - b, "divide": a / b if b else 0.0}[op]
        result = round(raw, 5)
        self.tool(op, _num(result), a=_num(a), b=_num(b))
        if op == "subtract":
            self.state.subtraction, self.state.difference = (a, b), result
        return result

    def _percentage_change(self) -> float | str:
        if self.state.subtraction is None or self.state.difference is None:
            return "A change between which two figures? Ask for the difference first."
        return self._binary("divide", (self.state.difference, self.state.subtraction[1]))

    def _unknown(self, period: str | None = None) -> str:
        known = "; ".join(
            f"{name} ({', '.join(row['values'])})" for name, row in self.table.items()
        )
        missing = f"I have no figure for {period}. " if period else ""
        return f"{missing}I can answer from this table: {known}."


class _FinanceSession(DemoSession):
    def prepare(self, world: dict[str, Any]) -> None:
        world.setdefault("finance", {}).setdefault("calculations", [])

    def answer(self, chat: Chat, turn: Turn) -> Answer:
        table = turn.world["finance"].get("table") or DEFAULT_TABLE
        state = _State()
        questions = [text for role, text in chat if role == "user"]
        for text in questions[:-1]:
            self._record(_Calculator(table, state, None).ask(text), state)
        result = _Calculator(table, state, turn).ask(questions[-1])
        return Answer(result if isinstance(result, str) else format_number(result))

    @staticmethod
    def _record(result: float | str, state: _State) -> None:
        if not isinstance(result, str):
            state.answers.append(result)


class FinanceAgent(DemoAgent):
    """Demo agent for ConvFinQA-style questions: looks figures up and computes with tools.

    Tools: `lookup_figure(metric, period)`, `add(a, b)`, `subtract(a, b)`, `divide(a, b)`;
    every call of the last turn is logged in `world["finance"]["calculations"]`.
    """

    name = "finance"
    session_class = _FinanceSession
