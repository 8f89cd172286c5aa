"""The compact JSON of one CaseResult: what the results store writes and `Results` keeps.

It holds what pydantic's `model_dump_json(exclude_defaults=True)` holds, made small:
- what pydantic's `model_dump(exclude_defaults=True)` holds, read off the models' fields
  (`_fastline.line_of`), written by orjson; values orjson cannot write (sets, dates, models
  inside `Any`) go through pydantic's own `to_jsonable_python`;
- what can be derived is not written, and `decode` derives it again:
  - an assertion result is an array, `[kind, message, expected, actual, duration_ms]`,
    followed by a dict of the rest when it holds more (status, id, score, details, ...,
    as pydantic dumps them; children are arrays too): key names cost more than a passed
    check's values; in a turn, `actual` is left out (4 items before the dict) when it is
    the turn's reply text, which every check of the reply holds;
  - `"_o"`: the observation's flags, added up: 1 its messages are exactly one assistant
    message holding its text, 2 its turn and trace ids are derived (below), 4 its
    `effects` is `{}` (what the engine records when the agent reported none);
  - `"_th"`: the thread id every observation of the case shares, written once, as
    `[run id, kernel repetition]` when it is the engine's (`case_thread`);
  - a turn's `index` when it is its place in the list;
  - derived ids (flag 2): the turn id is `eval.<digest of {threadId, stepId}>` and the
    trace id the first 32 hex digits of its sha256 (how the engine makes them);
  - `"_r"`: the counts of the instance's `Run.df` row (and why it did not pass), so that a
    store read back builds its rows without building a model;
- durations are kept to the microsecond.

Lines written before these forms existed decode as they always did: plain pydantic JSON,
and the earlier compact lines (assertions as dicts, the flags as `"_m": 1` and `"_d": 1`).
"""

from __future__ import annotations

import json
from typing import Any, get_args

import orjson
from pydantic_core import to_jsonable_python

from convlab.model._fastline import IDS, NO_EFFECTS, REPLY, line_of_fields
from convlab.model._ids import case_thread, trace_of, turn_id_of
from convlab.model.records import Row, instance_row, why_not_passed
from convlab.model.results import CaseResult, Status, TurnResult, variant_label

__all__ = [
    "case_thread",
    "decode",
    "encode",
    "encode_fields",
    "expand",
    "head_of_line",
    "loads",
    "row_of_line",
    "status_of_line",
    "trace_of",
    "turn_id_of",
]

_STATUSES = frozenset(get_args(Status))


def _unpacked(checks: list[Any], reply: Any) -> list[Any]:
    """`_fastline._packed` undone (an assertion result already a dict, as earlier lines hold them,
    stays as it is); a default is left out, as `model_dump(exclude_defaults=True)` did."""
    out: list[Any] = []
    for item in checks:
        n = len(item) if type(item) is list else 0
        rest = item[-1] if n and type(item[-1]) is dict else None
        if rest is not None:
            n -= 1
        if n == 5:
            actual, duration = item[3], item[4]
        elif n == 4:
            actual, duration = reply, item[3]
        else:  # not the array form: pydantic says what is wrong with it
            out.append(item)
            continue
        check: dict[str, Any] = {"kind": item[0]}
        if item[1] != "":
            check["message"] = item[1]
        if item[2] is not None:
            check["expected"] = item[2]
        if actual is not None:
            check["actual"] = actual
        if duration != 0:
            check["duration_ms"] = duration
        if rest is not None:
            if type(rest.get("children")) is list:
                rest["children"] = _unpacked(rest["children"], reply)
            check.update(rest)
        out.append(check)
    return out


def _reply_of(obs: dict[str, Any] | None) -> Any:
    """The reply text of an observation's dict as the line holds it."""
    if not isinstance(obs, dict):
        return None
    if "text_in" in obs:
        try:
            return obs["messages"][obs["text_in"]]["content"]
        except (LookupError, TypeError):
            return None  # a hand-edited line: pydantic says what is wrong with it
    return obs.get("text")


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value)


def encode(result: CaseResult, thread: tuple[str, int] | None = None) -> bytes:
    """The compact line of `result` (without a trailing newline); `thread` is the (run id,
    kernel repetition) its thread id was made from, when the engine made it."""
    return encode_fields(result.__dict__, thread, why_not_passed(result))


def encode_fields(d: dict[str, Any], thread: tuple[str, int] | None, why: str) -> bytes:
    """`encode` of a result's fields (`_fastline.line_of_fields`); `why`: its
    `records.why_not_passed`."""
    shared = _shared_thread(d["turns"])
    plain, hint = line_of_fields(d, shared)  # straight from the models' fields
    if shared is not None:
        made = thread and case_thread(thread[0], d["case_id"], _items(d["variant"]), thread[1])
        plain["_th"] = [*thread] if thread and shared == made else shared
    if why:
        hint.append(why)
    else:  # trailing zeros are implied (a pass: usually every count but the checks')
        n = len(hint)
        while n > 1 and hint[n - 1] == 0:
            n -= 1
        del hint[n:]
    plain["_r"] = hint
    line = orjson.dumps(plain, default=_jsonable, option=orjson.OPT_NON_STR_KEYS)
    # orjson's bytes keep their 4 KB buffer; a run keeps every line: keep only the bytes
    return memoryview(line).tobytes()


def _shared_thread(turns: list[TurnResult]) -> str | None:
    """The thread id every observation of the case holds, if they hold one and the same."""
    if len(turns) == 1:  # the usual case
        obs = turns[0].observation
        return None if obs is None else obs.thread_id
    threads = {t.observation.thread_id for t in turns if t.observation is not None}
    return threads.pop() if len(threads) == 1 else None


def _items(variant: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(variant.items())


def expand(data: dict[str, Any]) -> dict[str, Any]:
    """The line's dict with what `encode` left out derived again (the model's own JSON)."""
    data.pop("_r", None)
    thread = data.pop("_th", None)
    if isinstance(thread, list):
        variant = _items(data.get("variant") or {})
        thread = case_thread(thread[0], data["case_id"], variant, thread[1])
    if type(data.get("assertions")) is list:
        data["assertions"] = _unpacked(data["assertions"], None)
    for i, turn in enumerate(data.get("turns", ())):
        if not isinstance(turn, dict):
            continue  # pydantic says what is wrong with it
        turn.setdefault("index", i)
        obs = turn.get("observation")
        if type(turn.get("assertions")) is list:
            turn["assertions"] = _unpacked(turn["assertions"], _reply_of(obs))
        if not isinstance(obs, dict):
            continue
        flags = obs.pop("_o", 0) | (REPLY if obs.pop("_m", None) else 0)
        if obs.pop("_d", None):
            flags |= IDS
        if flags & REPLY:
            obs["messages"] = [{"role": "assistant", "content": obs.get("text")}]
        if flags & NO_EFFECTS:
            obs["effects"] = {}
        if thread is not None and "thread_id" not in obs:
            obs["thread_id"] = thread
        if flags & IDS:
            step = turn.get("step_id") or str(turn.get("index", 0))
            obs["turn_id"] = turn_id_of(obs["thread_id"], step)
            obs["trace_id"] = trace_of(obs["turn_id"])
    return data


def loads(raw: bytes | str) -> Any:
    """orjson's speed; Python json's leniency (NaN, which `json.dumps` writes) and error
    messages when orjson refuses."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def decode(line: bytes | str) -> CaseResult:
    """The CaseResult a line holds (as `encode` wrote it, or plain pydantic JSON)."""
    return CaseResult.model_validate(expand(loads(line)))


Key = tuple[str, str, int, int]


def status_of_line(data: dict[str, Any]) -> str:
    """The status of a decoded line (`loads(line)`), checked to be a result's."""
    case_id, status = data["case_id"], data["status"]
    if status not in _STATUSES or not isinstance(case_id, str):
        raise ValueError(f"not a result: status {status!r}, case {case_id!r}")
    checked: str = status
    return checked


def head_of_line(data: dict[str, Any]) -> tuple[Key, str]:
    """The instance key and status of a decoded line (`loads(line)`), checked: enough to
    resume a store or hold a result, without its row."""
    status, case_id = status_of_line(data), data["case_id"]
    key = (
        case_id,
        variant_label(data.get("variant") or {}),
        data.get("repetition", 0),
        data.get("run", 0),
    )
    return key, status


def row_of_line(data: dict[str, Any], line: bytes) -> Row:
    """The `Run.df` row of a decoded line (`orjson.loads(line)`, not yet expanded), from
    its hints when it has them, else from its model."""
    hint = data.get("_r")
    if hint is None:
        return instance_row(decode(line))
    key, status = head_of_line(data)
    counts, why = [*hint[:8], *[0] * (8 - len(hint))], (hint[8] if len(hint) > 8 else "")
    return (
        *key,
        status,
        data.get("reward", 0.0),
        data.get("duration_ms", 0.0),
        len(data.get("turns", ())),
        why,
        data.get("code") or "",
        data.get("blame"),
        *counts[:5],
        data.get("attempts", 1),
        *counts[5:],
        data.get("started_at"),
        data.get("finish_reason"),
    )
