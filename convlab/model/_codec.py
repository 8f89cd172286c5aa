"""The compact JSON of one CaseResult: what the results store writes and `Results` keeps.

It is pydantic's `model_dump_json(exclude_defaults=True)` made small:
- pydantic's `model_dump(exclude_defaults=True)` written by orjson; values orjson cannot
  write (sets, dates, models inside `Any`) go through pydantic's own `to_jsonable_python`;
- what can be derived is not written, and `decode` derives it again:
  - `"_m": 1`: the observation's messages are exactly one assistant message holding its text;
  - `"_th"`: the thread id every observation of the case shares, written once, as
    `[run id, kernel repetition]` when it is the engine's (`case_thread`);
  - a turn's `index` when it is its place in the list;
  - `"_d": 1`: the turn id is `eval.<digest of {threadId, stepId}>` and the trace id the
    first 32 hex digits of its sha256 (how the engine makes them);
  - `"_r"`: the counts of the instance's `Run.df` row (and why it did not pass), so that a
    store read back builds its rows without building a model;
- durations are kept to the microsecond.

Lines written before these keys existed (plain pydantic JSON) decode as they always did.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any, get_args

import orjson
from pydantic_core import to_jsonable_python

from convlab.model.conversation import Message
from convlab.model.records import Row, instance_row
from convlab.model.results import CaseResult, Status, TurnResult, variant_label

__all__ = [
    "case_thread",
    "decode",
    "digest",
    "encode",
    "expand",
    "head_of_line",
    "loads",
    "row_of_line",
    "trace_of",
    "turn_id_of",
]

_STATUSES = frozenset(get_args(Status))


def digest(value: Any) -> str:
    """intention-kernel's `digest` (matrix.ts): sha256 hex of the JSON with keys sorted."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=1024)  # the engine makes it, the encoder checks it
def case_thread(run_id: str, case_id: str, variant: tuple[tuple[str, str], ...], n: int) -> str:
    """`<run id>:<case id>`, the case id as intention-kernel's (matrix.ts `expandCases`:
    digest of `{scenarioId, variants, repetition}`); `n` is the kernel's repetition."""
    if type(n) is not int or any(type(v) is not str for _, v in variant):
        case = digest({"scenarioId": case_id, "variants": dict(variant), "repetition": n})
        return f"{run_id}:{case}"
    # digest's text written out (3x faster): keys in sorted order, variants' too
    picks = ",".join(f"{_string(k)}:{_string(v)}" for k, v in sorted(dict(variant).items()))
    text = f'{{"repetition":{n},"scenarioId":{_string(case_id)},"variants":{{{picks}}}}}'
    return f"{run_id}:{hashlib.sha256(text.encode()).hexdigest()}"


@functools.lru_cache(maxsize=1024)  # the engine makes it, the encoder checks it
def turn_id_of(thread_id: str, step: str) -> str:
    """The turn's idempotent id, as intention-kernel's runner makes it."""
    # digest({"threadId": ..., "stepId": ...}) written out: two strings, keys in sorted order
    text = f'{{"stepId":{_string(step)},"threadId":{_string(thread_id)}}}'
    return f"eval.{hashlib.sha256(text.encode()).hexdigest()}"


_string = json.JSONEncoder(ensure_ascii=False).encode
"""A string as JSON, exactly as `digest`'s json.dumps writes it."""


@functools.lru_cache(maxsize=1024)
def trace_of(turn_id: str) -> str:
    """The trace id convlab gives a turn whose agent gave none (unique per run and turn)."""
    return hashlib.sha256(turn_id.encode()).hexdigest()[:32]


def _round(plain: dict[str, Any], key: str) -> None:
    value = plain.get(key)
    if type(value) is float and value >= 0:  # a timing; round() is 5x slower
        plain[key] = int(value * 1000 + 0.5) / 1000


def _round_checks(checks: list[dict[str, Any]]) -> None:
    for check in checks:
        _round(check, "duration_ms")
        if "children" in check:
            _round_checks(check["children"])


def _round_timings(plain: dict[str, Any]) -> None:
    """Timings to the microsecond (a float's 17 digits say nothing more)."""
    _round(plain, "duration_ms")
    _round_checks(plain.get("assertions", ()))
    for turn in plain.get("turns", ()):
        _round(turn, "duration_ms")
        _round_checks(turn.get("assertions", ()))
        if "observation" in turn:
            _round(turn["observation"], "latency_ms")


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


def _observation(turn: TurnResult, plain: dict[str, Any], thread: str | None) -> None:
    obs = turn.observation
    if obs is None:
        return
    text = obs.text
    if isinstance(text, str) and len(obs.messages) == 1 and _is_reply(obs.messages[0], text):
        del plain["messages"]
        plain["_m"] = 1
    elif text is not None and len(text) >= 256:
        for index, message in enumerate(obs.messages):
            if message.content == text:
                del plain["text"]
                plain["text_in"] = index
                break
    if thread is not None and obs.thread_id == thread:
        del plain["thread_id"]
    step = turn.step_id or str(turn.index)
    if (
        obs.thread_id
        and obs.turn_id == turn_id_of(obs.thread_id, step)
        and obs.trace_id == trace_of(obs.turn_id)
    ):
        del plain["turn_id"], plain["trace_id"]
        plain["_d"] = 1


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value)


def encode(
    result: CaseResult, row: Row | None = None, thread: tuple[str, int] | None = None
) -> bytes:
    """The compact line of `result` (without a trailing newline); `row` is its `Run.df` row,
    computed when not given; `thread` the (run id, kernel repetition) its thread id was
    made from, when the engine made it."""
    plain = result.model_dump(exclude_defaults=True)  # pydantic's Rust walk: the fast part
    _round_timings(plain)
    threads = {t.observation.thread_id for t in result.turns if t.observation is not None}
    shared = threads.pop() if len(threads) == 1 else None
    if shared is not None:
        made = thread and case_thread(thread[0], result.case_id, _items(result.variant), thread[1])
        plain["_th"] = [*thread] if thread and shared == made else shared
    for i, (turn, out) in enumerate(zip(result.turns, plain.get("turns", ()), strict=True)):
        if "observation" in out:
            _observation(turn, out["observation"], shared)
        if out.get("index") == i:
            del out["index"]
    row = row if row is not None else instance_row(result)
    hint: list[Any] = [*row[11:16], *row[17:20]]
    if row[8]:
        hint.append(row[8])
    else:  # trailing zeros are implied (a pass: usually every count but the checks')
        while len(hint) > 1 and hint[-1] == 0:
            hint.pop()
    plain["_r"] = hint
    line = orjson.dumps(plain, default=_jsonable, option=orjson.OPT_NON_STR_KEYS)
    # orjson's bytes keep their 4 KB buffer; a run keeps every line: keep only the bytes
    return memoryview(line).tobytes()


def _items(variant: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(variant.items())


def expand(data: dict[str, Any]) -> dict[str, Any]:
    """The line's dict with what `encode` left out derived again (the model's own JSON)."""
    data.pop("_r", None)
    thread = data.pop("_th", None)
    if isinstance(thread, list):
        variant = _items(data.get("variant") or {})
        thread = case_thread(thread[0], data["case_id"], variant, thread[1])
    for i, turn in enumerate(data.get("turns", ())):
        turn.setdefault("index", i)
        obs = turn.get("observation")
        if obs is None:
            continue
        if obs.pop("_m", None):
            obs["messages"] = [{"role": "assistant", "content": obs.get("text")}]
        if thread is not None and "thread_id" not in obs:
            obs["thread_id"] = thread
        if obs.pop("_d", None):
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


def head_of_line(data: dict[str, Any]) -> tuple[Key, str]:
    """The instance key and status of a decoded line (`loads(line)`), checked: enough to
    resume a store or hold a result, without its row."""
    case_id, status = data["case_id"], data["status"]
    if status not in _STATUSES or not isinstance(case_id, str):
        raise ValueError(f"not a result: status {status!r}, case {case_id!r}")
    variant = data.get("variant")
    key = (
        case_id,
        variant_label(variant) if variant else "",
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
