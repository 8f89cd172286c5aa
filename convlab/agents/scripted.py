"""The scripted user simulator: a persona and a goal play the user without any model.

It is the offline default for dynamic and code-test cases (examples/ run on it), and a
baseline that behaves the same way every run. Its rules, in order, on the agent's last
message:

1. no agent message yet -> open with the goal ("Hi, I'd like to submit a $250 ... expense.");
2. the agent asks to confirm -> "Yes, please go ahead." (or "No, please don't." when the
   goal says not to confirm);
3. the agent asks for a type / kind / category -> the words before that noun in the goal
   ("Client dinner"), with the amount when the goal has one ("Client dinner, $250");
4. the agent asks how much / the amount -> the goal's amount;
5. the agent asks which file -> the goal's file name;
6. the agent offers numbered choices -> the option the goal names, else the first one;
7. any other question -> the goal again, in other words;
8. no question at all -> the agent is done: goal achieved.

Like every simulator it answers `await simulate(messages, ctx)` with a SimulatorTurn; it
is also an Agent (the message is the reply text; `data` holds the whole turn) and a plain
`sim(messages, ctx)` function returning `{message, goal_achieved, reasoning}`.
"""

from __future__ import annotations

import re
from typing import Any

from convlab.agents.demos._base import asks_confirmation, chat_of
from convlab.agents.protocol import Agent, AgentContext, AgentSession
from convlab.agents.simulator import SimulatorTurn
from convlab.model.conversation import Message
from convlab.model.records import Observation

__all__ = ["ScriptedSimulator", "SimulatorTurn"]

_AMOUNT = re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|usd|eur)\b", re.I)
_FILE = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w.-]*\w\.[A-Za-z][A-Za-z0-9]{0,4})(?![\w/])")
_ASKS_KIND = re.compile(r"\b(?:what|which) (?:type|kind|category|sort) of (\w+)", re.I)
_ASKS_AMOUNT = re.compile(r"\bhow much\b|\bamount\b|\bcost\b|\bprice\b", re.I)
_ASKS_FILE = re.compile(r"\bwhich file\b|\bfile name\b|\bname of the file\b", re.I)
_OPTION = re.compile(r"^\s*\d+[.)]\s+(.+?)(?:\s+[-(].*)?$", re.M)
_NO_CONFIRM = re.compile(r"\b(do not|don'?t|never|refuse to) confirm\b|\bdecline\b", re.I)
_FILLER_WORDS = "a an the my our some submit file create make add get i want to need"
_FILLER = frozenset(_FILLER_WORDS.split())


def _goal_phrase(goal: str, noun: str) -> str | None:
    """The words that qualify `noun` in the goal: "Submit a $250 client dinner expense" ->
    "client dinner"."""
    m = re.search(rf"((?:[\w$.,']+\s+){{1,4}}){re.escape(noun)}s?\b", goal, re.I)
    if not m:
        return None
    words = [w for w in m.group(1).split() if w.lower() not in _FILLER and not _AMOUNT.fullmatch(w)]
    return " ".join(words[-2:]) or None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


class ScriptedSimulator(Agent):
    """A rule-based simulated user that answers from its goal (see the module docstring).

    Args:
        persona: Who the user is; the case's `ctx.persona` wins when given.
        goal: What the user wants; the case's `ctx.goal` (or its user context) wins when given.
    """

    name = "scripted"
    close_after_run = True

    def __init__(self, persona: str | None = None, goal: str | None = None) -> None:
        self.persona, self.goal = persona, goal

    async def simulate(self, messages: list[Any], ctx: AgentContext) -> SimulatorTurn:
        """The simulated user's next message, given the conversation so far."""
        return self.next_turn(messages, ctx.goal or self.goal or "", ctx.persona or self.persona)

    async def __call__(self, messages: list[Any], ctx: AgentContext) -> dict[str, Any]:
        """The simulator function shape: `{message, goal_achieved, reasoning}`."""
        turn = await self.simulate(messages, ctx)
        return {
            "message": turn.message,
            "goal_achieved": turn.goal_achieved,
            "reasoning": turn.reasoning,
        }

    async def open(self, ctx: AgentContext) -> AgentSession:
        """As an agent: each reply is the next user message."""
        return _ScriptedSession(self)

    def next_turn(self, messages: list[Any], goal: str, persona: str | None) -> SimulatorTurn:
        """Apply the rules to the agent's last message (pure: same input, same turn)."""
        chat = chat_of(messages)
        said = [text for role, text in chat if role == "assistant"]
        if not said or chat[-1][0] == "user":
            return self._opening(goal, persona)
        last = said[-1]
        if asks_confirmation(last):
            if _NO_CONFIRM.search(goal):
                return SimulatorTurn("No, please don't.", False, "asked to confirm; goal says no")
            return SimulatorTurn("Yes, please go ahead.", False, "asked to confirm: confirming")
        if "?" not in last:
            return SimulatorTurn("Thanks, that's all I needed.", True, "the agent is done")
        return self._answer(last, goal)

    def _opening(self, goal: str, persona: str | None) -> SimulatorTurn:
        why = f"opening as {persona}" if persona else "opening with the goal"
        if not goal:
            return SimulatorTurn("Hi, I need some help.", False, why)
        text = goal.strip().rstrip(".")
        opener = text if text.lower().startswith("i ") else f"Hi, I'd like to {_lower_first(text)}"
        return SimulatorTurn(opener + ".", False, why)

    def _answer(self, question: str, goal: str) -> SimulatorTurn:
        amount = _AMOUNT.search(goal)
        kind = _ASKS_KIND.search(question)
        if kind:
            phrase = _goal_phrase(goal, kind.group(1))
            if phrase:
                reply = phrase[:1].upper() + phrase[1:]
                reply += f", {amount.group(0)}" if amount else ""
                return SimulatorTurn(reply, False, f"asked for the {kind.group(1)} type")
        if _ASKS_AMOUNT.search(question) and amount:
            return SimulatorTurn(f"It was {amount.group(0)}.", False, "asked for the amount")
        file = _FILE.search(goal)
        if _ASKS_FILE.search(question) and file:
            return SimulatorTurn(file.group(1), False, "asked which file")
        options = [o.strip() for o in _OPTION.findall(question)]
        if options:
            named = [o for o in options if o.lower() in goal.lower()]
            pick = f"I'll take the {named[0]}." if named else "The first one, please."
            return SimulatorTurn(pick, False, "offered a choice")
        text = goal.strip().rstrip(".") or "get some help"
        return SimulatorTurn(f"As I said, I'd like to {_lower_first(text)}.", False, "restated")


class _ScriptedSession(AgentSession):
    def __init__(self, sim: ScriptedSimulator) -> None:
        self.sim = sim

    async def send(self, messages: list[Message], ctx: AgentContext) -> Observation:
        turn = await self.sim.simulate(messages, ctx)
        data = {
            "message": turn.message,
            "goal_achieved": turn.goal_achieved,
            "reasoning": turn.reasoning,
        }
        return Observation(
            text=turn.message, data=data, messages=[Message(role="assistant", content=turn.message)]
        )
