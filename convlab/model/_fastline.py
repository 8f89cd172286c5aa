"""The store line of a result, read straight from its models' fields.

`_codec.encode` used to make every line from pydantic's `model_dump(exclude_defaults=True)`,
reshaped by a walk (assertion results as arrays, derived ids left out, ...): about 55 us a
case, a fifth of an in-process case's cost. This module makes the same dict from the models'
`__dict__`s, in about a third of that time: the usual fields (texts, statuses, timings, ids)
by hand, and what they rarely hold (tool calls, structured data, a world, a turn's input,
values of fields that take any value) through pydantic's own serializer, one value at a time.

A field holding a value of another type than its own (set without validation) is written
through pydantic's serializer too, as its dump of the whole result would write it.
tests/test_fastline.py holds every line byte-equal to pydantic's dump reshaped as it used to
be, and the models' fields as this module lists them (a field added to a model must be added
here).
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from convlab.model._ids import trace_of, turn_id_of
from convlab.model._trusted import dumped
from convlab.model.conversation import Message, Observation
from convlab.model.records import tokens_of
from convlab.model.results import AssertionResult, CaseResult, TurnResult

__all__ = ["IDS", "NO_EFFECTS", "REPLY", "line_of", "line_of_fields"]

REPLY, IDS, NO_EFFECTS = 1, 2, 4
"""The observation's flags (`"_o"`, added up; `_codec`'s docstring says what each means)."""
_USUAL = REPLY | IDS | NO_EFFECTS

_PLAIN = frozenset({str, int, float, bool, type(None)})

_TEXT_ONCE = 256
"""A reply this long that is also a message's content is written once (`text_in`)."""


def _is_reply(message: Message, text: str) -> bool:
    """The message is exactly `{"role": "assistant", "content": text}`."""
    return (
        message.role == "assistant"
        and message.content == text
        and message.name is None
        and message.tool_call_id is None
        and message.tool_calls is None
        and not message.__pydantic_extra__
    )


def line_of(result: CaseResult, shared: str | None) -> tuple[dict[str, Any], list[Any]]:
    """The line's dict of `result` (before `_th` and `_r`), and the counts of its row hint
    (`records.row_counts`). `shared`: the thread id every observation of the case holds
    (written once)."""
    return line_of_fields(result.__dict__, shared)


def line_of_fields(d: dict[str, Any], shared: str | None) -> tuple[dict[str, Any], list[Any]]:
    """`line_of` of a result's fields (a CaseResult's `__dict__`, or the fields one would
    be built from: the engine writes a passed instance's line without building it)."""
    counts = [0, 0, 0, 0, 0]  # checks, failed checks, checkpoints, reached, tool calls
    return _case(d, shared, counts), [*counts, *tokens_of(d["usage"], d["turns"])]


def _put(out: dict[str, Any], name: str, value: Any, default: Any) -> None:
    """`value` under `name` unless it is the field's default (`exclude_defaults`)."""
    if value is default:  # the usual case (None): nothing to check or write
        return
    if value != default:
        out[name] = value if type(value) in _PLAIN else _any(value)


def _timing(out: dict[str, Any], name: str, value: Any, default: Any) -> None:
    """As `_put`; a timing is kept to the microsecond (17 digits say nothing more)."""
    if value != default:
        if type(value) is float:
            out[name] = int(value * 1000 + 0.5) / 1000 if value >= 0 else value
        else:
            out[name] = value if type(value) in _PLAIN else _any(value)


def _case(d: dict[str, Any], shared: str | None, counts: list[int]) -> dict[str, Any]:
    v = d["case_id"]
    out: dict[str, Any] = {"case_id": v if type(v) in _PLAIN else _any(v)}
    if d["variant"]:
        out["variant"] = _any(d["variant"])
    _put(out, "repetition", d["repetition"], 0)
    _put(out, "run", d["run"], 0)
    v = d["status"]
    out["status"] = v if type(v) in _PLAIN else _any(v)
    _put(out, "reward", d["reward"], 0.0)
    turns = d["turns"]
    if turns:
        out["turns"] = [_turn(t, i, shared, counts) for i, t in enumerate(turns)]
    if d["assertions"]:
        out["assertions"] = _packed(d["assertions"], None, counts)
    checkpoints = d["checkpoints"]
    if checkpoints:
        out["checkpoints"] = [dumped(c, exclude_defaults=True) for c in checkpoints]
        counts[2] = len(checkpoints)
        counts[3] = sum(c.reached for c in checkpoints)
    _unless_none(out, d, _CASE_ERROR)
    _timing(out, "duration_ms", d["duration_ms"], 0.0)
    _put(out, "attempts", d["attempts"], 1)
    if d["usage"] is not None:
        out["usage"] = dumped(d["usage"], exclude_defaults=True)
    _unless_none(out, d, _CASE_END)
    if d["metadata"]:
        out["metadata"] = _any(d["metadata"])
    return out


_CASE_ERROR = ("error", "code", "blame")
_CASE_END = ("started_at", "finish_reason")
_TURN_STEP = ("step_id", "variant")
_TURN_ERROR = ("error", "code")


def _unless_none(out: dict[str, Any], d: dict[str, Any], names: tuple[str, ...]) -> None:
    """`_put` of each field of `names` whose default is None, in one call (a line has a
    dozen such fields, most of them None)."""
    for name in names:
        value = d[name]
        if value is not None:
            if type(value) in _PLAIN:
                out[name] = value
            else:  # what pydantic's dump does with another value is `_put`'s to say
                _put(out, name, value, None)


def _turn(t: TurnResult, i: int, shared: str | None, counts: list[int]) -> dict[str, Any]:
    d = t.__dict__
    out: dict[str, Any] = {}
    index = d["index"]
    _put(out, "index", index, i)  # its place in the list is implied
    _unless_none(out, d, _TURN_STEP)
    if d["input"] is not None:
        out["input"] = d["input"].model_dump(exclude_defaults=True)
    if d["messages"]:
        out["messages"] = [_message(m) for m in d["messages"]]
    obs: Observation | None = d["observation"]
    if obs is not None:
        out["observation"] = _observation(obs, d["step_id"] or str(index), shared)
        counts[4] += len(obs.tool_calls)
    if d["assertions"]:
        out["assertions"] = _packed(d["assertions"], obs.text if obs is not None else None, counts)
    _put(out, "status", d["status"], "passed")
    _timing(out, "duration_ms", d["duration_ms"], 0.0)
    _unless_none(out, d, _TURN_ERROR)
    return out


def _message(m: Message) -> dict[str, Any]:
    d = m.__dict__
    content = d["content"]
    if (  # the usual message: a role and a text
        type(content) is str
        and d["name"] is None
        and d["tool_call_id"] is None
        and d["tool_calls"] is None
        and not m.__pydantic_extra__
    ):
        role = d["role"]
        return {"content": content} if role == "user" else {"role": role, "content": content}
    if m.__pydantic_extra__ or d["tool_calls"] is not None or type(d["content"]) is list:
        return m.model_dump(exclude_defaults=True)  # pydantic's own: its extra keys too
    out: dict[str, Any] = {}
    _put(out, "role", d["role"], "user")
    _put(out, "content", d["content"], None)
    _put(out, "name", d["name"], None)
    _put(out, "tool_call_id", d["tool_call_id"], None)
    return out


def _observation(obs: Observation, step: str, shared: str | None) -> dict[str, Any]:
    d = obs.__dict__
    text, latency, messages = d["text"], d["latency_ms"], d["messages"]
    if (  # the usual reply: its text and latency, all else the flags derive (one test)
        type(text) is str
        and type(latency) is float
        and latency >= 0
        and len(messages) == 1
        and d["data"] is None
        and not d["tool_calls"]
        and d["status"] == "completed"
        and d["interaction"] is None
        and not d["facts"]
        and d["effects"] == {}
        and type(d["effects"]) is dict
        and d["usage"] is None
        and d["error"] is None
        and d["outcome"] == "ok"
        and d["truncated_from"] is None
        and d["replayed"] is False
        and not d["events"]
        and shared
        and d["thread_id"] == shared
        and d["turn_id"] == turn_id_of(shared, step)
        and d["trace_id"] == trace_of(d["turn_id"])
        and _is_reply(messages[0], text)
    ):
        return {"text": text, "latency_ms": int(latency * 1000 + 0.5) / 1000, "_o": _USUAL}
    out: dict[str, Any] = {}
    flags = 0
    text = d["text"]
    _put(out, "text", text, None)
    if d["data"] is not None:
        out["data"] = _any(d["data"])
    if d["tool_calls"]:
        out["tool_calls"] = [c.model_dump(exclude_defaults=True) for c in d["tool_calls"]]
    messages = d["messages"]
    if messages:
        if type(text) is str and len(messages) == 1 and _is_reply(messages[0], text):
            flags = REPLY
        else:
            out["messages"] = [_message(m) for m in messages]
    _put(out, "status", d["status"], "completed")
    if d["interaction"] is not None:
        out["interaction"] = _any(d["interaction"])
    if d["facts"]:
        out["facts"] = _any(d["facts"])
    effects = d["effects"]
    if effects == {} and type(effects) is dict:
        flags |= NO_EFFECTS
    elif effects is not None:
        out["effects"] = _any(effects)
    if d["usage"] is not None:
        out["usage"] = dumped(d["usage"], exclude_defaults=True)
    _timing(out, "latency_ms", d["latency_ms"], None)
    _put(out, "error", d["error"], None)
    _put(out, "outcome", d["outcome"], "ok")
    _put(out, "truncated_from", d["truncated_from"], None)
    thread = d["thread_id"]
    if thread is None or thread != shared:
        _put(out, "thread_id", thread, None)
    turn_id, trace_id = d["turn_id"], d["trace_id"]
    if thread and turn_id == turn_id_of(thread, step) and trace_id == trace_of(turn_id):
        flags |= IDS
    else:
        _put(out, "turn_id", turn_id, None)
        _put(out, "trace_id", trace_id, None)
    _put(out, "replayed", d["replayed"], False)
    if d["events"]:
        out["events"] = _any(d["events"])
    if not flags & REPLY and text is not None and len(text) >= _TEXT_ONCE:
        for index, message in enumerate(messages):
            if message.content == text:  # the long reply is written once, in its message
                del out["text"]
                out["text_in"] = index
                break
    if flags:
        out["_o"] = flags
    return out


def _packed(checks: list[AssertionResult], reply: str | None, counts: list[int]) -> list[Any]:
    """`_codec._packed` of the checks' dumps, from the checks themselves."""
    out: list[Any] = []
    for check in checks:
        d = check.__dict__
        kind, message, expected, actual = d["kind"], d["message"], d["expected"], d["actual"]
        duration, status = d["duration_ms"], d["status"]
        if type(kind) is not str:
            kind = _any(kind)
        if type(message) is not str:
            message = _any(message)
        if type(expected) not in _PLAIN:
            expected = _any(expected)
        if type(actual) not in _PLAIN:
            actual = _any(actual)
        if type(duration) is float and duration >= 0:
            duration = int(duration * 1000 + 0.5) / 1000
        elif duration == 0.0:  # left out of the dump: the array holds the default
            duration = 0.0
        elif type(duration) not in _PLAIN:
            duration = _any(duration)
        item: list[Any] = [kind, message, expected]
        if reply is None or type(actual) is not str or actual != reply:
            item.append(actual)
        item.append(duration)
        if (  # the usual check: nothing more to write
            status != "passed"
            or d["id"] is not None
            or d["label"] is not None
            or d["error"] is not None
            or d["blame"] is not None
            or d["score"] is not None
            or d["children"]
            or d["details"]
        ):
            item.append(_rest(d, status, reply))
        out.append(item)
        counts[0] += 1
        counts[1] += status in ("failed", "error")
    return out


_ANY: TypeAdapter[Any] = TypeAdapter(Any)


def _any(value: Any) -> Any:
    """A value of a field that takes any value, as pydantic's dump of its model writes it."""
    return _ANY.dump_python(value, exclude_defaults=True)


def _rest(d: dict[str, Any], status: str, reply: str | None) -> dict[str, Any]:
    """What a check's array is followed by: its fields but the array's, as dumped."""
    rest: dict[str, Any] = {}
    _put(rest, "id", d["id"], None)
    _put(rest, "label", d["label"], None)
    _put(rest, "status", status, "passed")
    _put(rest, "error", d["error"], None)
    _put(rest, "blame", d["blame"], None)
    _put(rest, "score", d["score"], None)
    if d["children"]:
        rest["children"] = _packed(d["children"], reply, [0, 0])
    if d["details"]:
        rest["details"] = _any(d["details"])
    return rest
