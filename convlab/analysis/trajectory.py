"""What one case instance did, turn by turn, reduced to what decides its outcome.

A trajectory is the sequence of an instance's turns, each a `Step`:

- the user's side: what the user said (folded: case and whitespace do not count) and the
  suite variant of a scripted turn, so a simulated user who says something else, or another
  variant, makes another step;
- the agent's side: its tool calls in order, each with its name and its argument *keys*; an
  argument's *value* only where one of the case's checks reads it (a `tool_called` with
  arguments, an `expected_tools` entry with `args`, a `check` on
  `response.tool_calls[i].arguments.KEY`), so values no check looks at never split runs;
- what the checks said about the turn (each turn-scope assertion's status), which for a turn
  that only replies text says which of its checks the reply passed: a reply's wording that no
  check reads is not part of the step;
- the checkpoints first reached at that turn, and whether the turn erred or timed out.

Every trajectory ends with `END`, so a run that stops where another goes on takes another way.
Pure data: nothing here renders; `describe` and `call_text` are the words the views use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from convlab._readable import shorten
from convlab.checks.tools import match_tool_name, parse_arguments
from convlab.model.assertions import All, Any_, Check, ExpectedTools, Not, ToolCalled
from convlab.model.records import AssertionResult, CaseResult, TurnResult
from convlab.model.suite import Case

__all__ = [
    "END",
    "NOTHING_READ",
    "Call",
    "ReadArguments",
    "Step",
    "StepTable",
    "Trajectory",
    "call_text",
    "describe",
    "ending",
    "read_arguments",
]

_SAID = 60
"""How much of a user's message a description quotes."""


class Call(NamedTuple):
    """One tool call as a trajectory sees it."""

    name: str
    arguments: tuple[str, ...]
    """Each argument as its key, or `key=value` (compact JSON) where a check reads the value."""
    failed: bool = False
    """The call returned an error."""


class Step(NamedTuple):
    """One turn of a trajectory: equal steps are the same way through the conversation."""

    user: str
    """What the user said, folded (case, whitespace); the variant after it when there is one."""
    calls: tuple[Call, ...] = ()
    checks: tuple[tuple[str, str], ...] = ()
    """Each turn-scope assertion as (its name, its status), in order."""
    reached: tuple[str, ...] = ()
    """Checkpoints first reached at this turn."""
    outcome: str = ""
    """'' (the agent answered), `error` or `timeout`."""
    said: str = ""
    """What the user said, as said (first of the runs that share the step); not compared."""

    def key(self) -> tuple[Any, ...]:
        """What makes two steps the same way (everything but `said`)."""
        return self[:-1]


END = Step(user="\x00end")
"""The step after an instance's last turn: where one run stops and another goes on."""

Trajectory = tuple[int, ...]
"""A run's steps, by their numbers in a `StepTable`."""


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _walk(specs: Iterable[Any]) -> Iterator[Any]:
    for spec in specs:
        yield spec
        if isinstance(spec, All | Any_):
            yield from _walk(spec.assertions)
        elif isinstance(spec, Not):
            yield from _walk([spec.assertion])


def _specs(case: Case) -> Iterator[Any]:
    yield from _walk(case.assertions)
    for turn in case.turns:
        yield from _walk(turn.assertions)
    yield from _walk(cp.assertion for cp in case.checkpoints if cp.assertion is not None)


class ReadArguments:
    """The argument values a case's checks read, by tool name (`*`: a path check, any tool),
    and per tool a call may name, the keys whose values a step keeps (worked out once)."""

    __slots__ = ("_known", "by_tool")

    def __init__(self, by_tool: Mapping[str, frozenset[str]]) -> None:
        self.by_tool = dict(by_tool)
        self._known: dict[str, frozenset[str]] = {}

    def keys(self, name: str) -> frozenset[str]:
        """The argument keys of a call of tool `name` whose values a check reads."""
        got = self._known.get(name)
        if got is None:
            wanted = set(self.by_tool.get("*", ()))
            for tool, keys in self.by_tool.items():
                if tool != "*" and match_tool_name(name, tool):
                    wanted |= keys
            got = self._known[name] = frozenset(wanted)
        return got


def read_arguments(case: Case | None) -> ReadArguments:
    """The argument values the case's checks read, by tool (`*`: a path check, any tool)."""
    read: dict[str, set[str]] = {}
    for spec in _specs(case) if case is not None else ():
        if isinstance(spec, ToolCalled) and not isinstance(spec.value, str | list):
            read.setdefault(spec.value.name, set()).update(spec.value.arguments or {})
        elif isinstance(spec, ExpectedTools):
            for tool in spec.tools:
                read.setdefault(tool.name, set()).update(tool.args or {})
        elif isinstance(spec, Check):
            path = [str(p) for p in spec.path]
            if "tool_calls" in path and "arguments" in path[:-1]:
                read.setdefault("*", set()).add(path[path.index("arguments") + 1])
    return ReadArguments({name: frozenset(keys) for name, keys in read.items() if keys})


NOTHING_READ = ReadArguments({})
"""No check reads an argument's value (a run with no suite)."""


_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)


def _value(value: Any) -> str:
    """An argument's value as compact, key-sorted JSON (`120`, `"A1"`)."""
    return _JSON.encode(value)


def _call(name: str, arguments: Any, failed: bool, read: ReadArguments) -> tuple[Any, ...]:
    """A call as a plain tuple equal to its `Call` (made once per distinct step)."""
    if not read.by_tool and type(arguments) is dict:  # the common case, kept short
        return (name, tuple(sorted(arguments)), failed)
    args = parse_arguments(arguments)
    if args is None:  # arguments that are not an object: their presence is what a step keeps
        return (name, ("…",) if arguments else (), failed)
    wanted = read.keys(name)
    if not wanted:
        return (name, tuple(sorted(args)), failed)
    parts = tuple(f"{k}={_value(args[k])}" if k in wanted else k for k in sorted(args))
    return (name, parts, failed)


def _check_name(a: AssertionResult) -> str:
    return a.label or a.id or a.kind


class StepTable:
    """Every distinct step met so far, numbered (`END` is 0): a trajectory is its steps'
    numbers, so runs are grouped by comparing small integers, and each distinct step is
    made and described once however many runs take it."""

    __slots__ = ("_folded", "_ids", "steps")

    def __init__(self) -> None:
        self.steps: list[Step] = [END]
        """The steps, by number."""
        self._ids: dict[tuple[Any, ...], int] = {END.key(): 0}
        self._folded: dict[str, str] = {}

    def _user(self, t: TurnResult) -> tuple[str, str]:
        said = "\n".join([m.text() for m in t.messages])
        folded = self._folded.get(said)
        if folded is None:
            folded = self._folded[said] = _fold(said)
        return said, folded + (f"\x00{t.variant}" if t.variant else "")

    def number(self, t: TurnResult, reached: tuple[str, ...], read: ReadArguments) -> int:
        """The number of the step turn `t` took (new steps are added)."""
        said, user = self._user(t)
        obs = t.observation
        calls = (
            tuple([_call(c.name, c.arguments, bool(c.error), read) for c in obs.tool_calls])
            if obs
            else ()
        )
        checks = tuple([(_check_name(a), a.status) for a in t.assertions])
        outcome = "" if t.status != "error" and (obs is None or obs.outcome == "ok") else "error"
        if obs is not None and obs.outcome == "timeout":
            outcome = "timeout"
        key = (user, calls, checks, reached, outcome)
        n = self._ids.get(key)
        if n is None:
            n = self._ids[key] = len(self.steps)
            made = tuple(Call(*c) for c in calls)
            self.steps.append(Step(user, made, checks, reached, outcome, said))
        return n

    def trajectory(self, result: CaseResult, read: ReadArguments) -> Trajectory:
        """The instance's steps' numbers, one per turn, then `END`'s (0)."""
        reached: dict[int, list[str]] = {}
        for cp in result.checkpoints:
            if cp.reached and cp.reached_at_turn is not None:
                reached.setdefault(cp.reached_at_turn - 1, []).append(cp.id)
        steps = [self.number(t, tuple(reached.get(t.index, ())), read) for t in result.turns]
        return (*steps, 0)


def ending(step: Step) -> str:
    """How a turn that did not answer ended: `a timeout` or `an error`."""
    return "a timeout" if step.outcome == "timeout" else "an error"


def call_text(call: Call) -> str:
    """`lookup_policy(amount)`, `create_expense`, `refund(id="A1") failed`."""
    args = f"({', '.join(call.arguments)})" if call.arguments else ""
    return call.name + args + (" failed" if call.failed else "")


def describe(step: Step, *, user: bool = False, checks: bool = False) -> str:
    """A step in words: its tool calls and checkpoints (`no tool call` when none); what the
    user said with `user`; the checks that did not pass with `checks`."""
    if step.key() == END.key():
        return "the conversation ends"
    parts = [", ".join(call_text(c) for c in step.calls) or "no tool call"]
    parts += [f"checkpoint {cp} reached" for cp in step.reached]
    if step.outcome:
        parts.append(f"the agent's turn ended in {ending(step)}")
    if checks and step.checks:
        bad = [f"{name} {status}" for name, status in step.checks if status != "passed"]
        parts.append("checks: " + (", ".join(bad) if bad else "all passed"))
    text = "; ".join(parts)
    return f"user said “{shorten(step.said, _SAID)}” → {text}" if user else text
