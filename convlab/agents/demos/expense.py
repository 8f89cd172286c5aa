"""Demo agent `expense`: files an expense in three steps (what, how much, confirm).

A demo, not a product: rules instead of a model, so it runs offline and answers the same
way every time. It works from the visible conversation, so it answers a whole history sent
in one call (JSONL `input` arrays, Yao's `expense-turn1/2/3` examples) exactly as it answers the
same conversation sent turn by turn.

Flow (as in the transcripts of Yao's agent-test design document):
1. the type or the amount is missing -> it asks ("What type of expense ...?", "How much ...?");
2. both are known -> it calls `create_expense(type, amount)` (a pending record in
   `world["expenses"]`) and asks "I'll create a travel expense for $3500. Please confirm.";
3. the user confirms -> `submit_expense(reference)` and "Expense submitted! Reference:
   EXP-001" with a JSON summary block. A history that never created the pending record
   (one-call inputs) gets `create_expense` and `submit_expense` in the same turn.
"No" cancels the pending record (`cancel_expense`); "show my expenses" lists them as JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from convlab.agents.demos._base import (
    Answer,
    Chat,
    DemoAgent,
    DemoSession,
    Turn,
    affirms,
    asks_confirmation,
    declines,
)

__all__ = ["ExpenseAgent", "parse_amount", "parse_type"]

TYPES: dict[str, tuple[str, ...]] = {
    "travel": ("travel", "flight", "trip", "train", "airfare"),
    "meals": ("meal", "dinner", "lunch", "breakfast", "restaurant", "food"),
    "lodging": ("hotel", "lodging", "accommodation"),
    "transport": ("taxi", "uber", "cab", "parking", "mileage", "transport"),
    "supplies": ("supplies", "equipment", "stationery"),
    "training": ("training", "course", "conference", "seminar"),
}
_WORD = re.compile(r"[a-z]+")
_MONEY = re.compile(r"\$\s*(\d[\d,]*(?:\.\d{1,2})?)|(\d[\d,]*(?:\.\d{1,2})?)\s*(?:dollars|usd)\b")
_NUMBER = re.compile(r"\b(\d[\d,]*(?:\.\d{1,2})?)\b")
_LIST = re.compile(r"\b(list|show|status|what are)\b.*\bexpenses\b|\bmy expenses\b", re.I)
_FILE_VERB = re.compile(r"\b(submit|file|create|add|claim|new)\b", re.I)
_DONE = re.compile(r"\bsubmitted\b|\bcancell?ed\b", re.I)


def parse_type(text: str) -> str | None:
    """The expense category a user message names (travel, meals, lodging, ...), if any."""
    words = set(_WORD.findall(text.lower()))
    for category, synonyms in TYPES.items():
        if any(w in words or w + "s" in words for w in synonyms):
            return category
    return None


def parse_amount(text: str, asked: bool = False) -> int | float | None:
    """A money amount ($3500, 250 dollars); a bare number counts only when it was asked for."""
    m = _MONEY.search(text)
    raw = (m.group(1) or m.group(2)) if m else None
    if raw is None and asked:
        bare = _NUMBER.search(text)
        raw = bare.group(1) if bare else None
    if raw is None:
        return None
    value = float(raw.replace(",", ""))
    return int(value) if value.is_integer() else value


def _money(amount: float) -> str:
    return f"${amount}" if isinstance(amount, int) else f"${amount:.2f}"


@dataclass
class _Draft:
    """The expense being described so far."""

    type: str | None = None
    amount: int | float | None = None

    def read(self, text: str, previous: str) -> None:
        """Take what a user message says (later mentions replace earlier ones)."""
        self.type = parse_type(text) or self.type
        asked = bool(re.search(r"how much|amount", previous, re.I))
        amount = parse_amount(text, asked=asked)
        self.amount = amount if amount is not None else self.amount

    @property
    def complete(self) -> bool:
        return self.type is not None and self.amount is not None


_APPROVAL = re.compile(r"over \$?([\d,]+(?:\.\d+)?)[^.]*approv", re.I)


def _rules(instructions: str, amount: float, attention: int | None = None) -> str:
    """What the system prompt asks for: the demo follows two rules a prompt may state.

    "Expenses over $N need manager approval" and "ask for a receipt": so trying a better
    system prompt (notebooks/prompt_iteration.ipynb) changes what the agent says. With an
    `attention` of N words, only the rules within the prompt's first N words are followed.
    """
    if attention is not None:
        instructions = " ".join(instructions.split()[:attention])
    out = ""
    found = _APPROVAL.search(instructions)
    limit = float(found.group(1).replace(",", "")) if found else None
    if limit is not None and amount > limit:
        out += f" It is over {_money(int(limit) if limit.is_integer() else limit)}, so it needs"
        out += " manager approval before it is paid."
    if re.search(r"receipt", instructions, re.I):
        out += " Please keep the receipt: you will be asked to attach it."
    return out


def _replay(chat: Chat) -> tuple[_Draft, str]:
    """The draft before the last user message, and the assistant message it answers."""
    draft, previous = _Draft(), ""
    for role, text in chat[:-1]:
        if role == "assistant":
            previous = text
            if _DONE.search(text):
                draft = _Draft()
        else:
            draft.read(text, previous)
    return draft, previous


class _ExpenseSession(DemoSession):
    attention: int | None = None
    """Follow only the rules within the system prompt's first this many words (None: all)."""

    def prepare(self, world: dict[str, Any]) -> None:
        world.setdefault("expenses", [])

    def answer(self, chat: Chat, turn: Turn) -> Answer:
        draft, previous = _replay(chat)
        text = chat[-1][1]
        confirming = asks_confirmation(previous) and not _DONE.search(previous)
        if confirming and draft.complete and affirms(text):
            return self._submit(draft, turn)
        if confirming and declines(text):
            return self._cancel(turn)
        if _LIST.search(text) and not parse_type(text) and not _FILE_VERB.search(text):
            return self._list(turn)
        draft.read(text, previous)
        return self._collect(draft, turn, greeting=len(chat) == 1)

    def _collect(self, draft: _Draft, turn: Turn, greeting: bool) -> Answer:
        if draft.type is None:
            hello = "Hello! I can help you submit an expense. " if greeting else ""
            if draft.amount is not None:
                return Answer(f"{hello}What type of expense is the {_money(draft.amount)} for?")
            return Answer(f"{hello}What type of expense would you like to submit?")
        if draft.amount is None:
            return Answer(f"How much was the {draft.type} expense?")
        record = self._pending(turn.world)
        if record is None:
            record = self._create(draft, turn)
        elif (record["type"], record["amount"]) != (draft.type, draft.amount):
            record.update(type=draft.type, amount=draft.amount)
            turn.tool(
                "update_expense",
                {"reference": record["reference"], "status": "pending"},
                reference=record["reference"],
                type=draft.type,
                amount=draft.amount,
            )
        rules = _rules(turn.ctx.instructions or "", draft.amount, self.attention)
        return Answer(
            f"I'll create a {draft.type} expense for {_money(draft.amount)}.{rules} Please confirm."
        )

    @staticmethod
    def _pending(world: dict[str, Any]) -> dict[str, Any] | None:
        pending = [e for e in world["expenses"] if e.get("status") == "pending"]
        return pending[-1] if pending else None

    @staticmethod
    def _create(draft: _Draft, turn: Turn) -> dict[str, Any]:
        expenses: list[dict[str, Any]] = turn.world["expenses"]
        reference = f"EXP-{len(expenses) + 1:03d}"
        record = {"reference": reference, "type": draft.type, "amount": draft.amount}
        record["status"] = "pending"
        expenses.append(record)
        turn.tool(
            "create_expense",
            {"reference": reference, "status": "pending"},
            type=draft.type,
            amount=draft.amount,
        )
        return record

    def _submit(self, draft: _Draft, turn: Turn) -> Answer:
        record = self._pending(turn.world)
        if record is None or (record["type"], record["amount"]) != (draft.type, draft.amount):
            record = self._create(draft, turn)
        record["status"] = "submitted"
        ref = record["reference"]
        turn.tool("submit_expense", {"reference": ref, "status": "submitted"}, reference=ref)
        summary = json.dumps(record)
        return Answer(f"Expense submitted! Reference: {ref}\n```json\n{summary}\n```")

    def _cancel(self, turn: Turn) -> Answer:
        record = self._pending(turn.world)
        if record is not None:
            record["status"] = "cancelled"
            ref = record["reference"]
            turn.tool("cancel_expense", {"reference": ref, "status": "cancelled"}, reference=ref)
        return Answer("Okay, I cancelled it. Nothing has been filed.")

    @staticmethod
    def _list(turn: Turn) -> Answer:
        expenses = turn.tool("list_expenses", list(turn.world["expenses"]))
        body = json.dumps({"count": len(expenses), "expenses": expenses})
        return Answer(f"You have {len(expenses)} expense(s):\n```json\n{body}\n```")


class ExpenseAgent(DemoAgent):
    """Demo agent that files expenses: asks type and amount, confirms, then submits.

    Tools: `create_expense(type, amount)`, `update_expense`, `submit_expense(reference)`,
    `cancel_expense(reference)`, `list_expenses()`; the records are in `world["expenses"]`.
    """

    name = "expense"
    session_class = _ExpenseSession


class _LiteSession(_ExpenseSession):
    attention = 20


class ExpenseLiteAgent(DemoAgent):
    """Demo agent `expense` as a smaller model would be: the same flow and tools, but it
    follows only the rules stated in the system prompt's first 20 words, as a small model
    loses instructions in a long prompt (a cheaper model to weigh against `expense`)."""

    name = "expense_lite"
    session_class = _LiteSession
