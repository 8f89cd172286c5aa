"""Reading what convlab wrote before records were msgspec structs (format 1).

Format-1 store lines were compact: what could be derived was left out, and `upgrade` derives
it again, giving the dict format 2 writes for the same record:
- an assertion result was an array, `[kind, message, expected, actual, duration_ms]`, then a
  dict of its other fields when it had more (children were arrays too); in a turn, `actual`
  was left out (4 items before the dict) when it was the turn's reply text;
- `"_o"`, an observation's flags added up: 1 its messages were exactly one assistant
  message holding its text, 2 its turn and trace ids were the derived ones, 4 its `effects`
  was `{}`; earlier lines said 1 as `"_m": 1` and 2 as `"_d": 1`;
- `"_th"`: the thread id every observation of the case shared, written once, as
  `[run id, kernel repetition]` when it was the engine's;
- a turn's `index` when it was its place in the list;
- `"_r"`: the counts of the instance's `Run.df` row (now derived from the record);
- `"text_in": n` in an observation: its text was message n's content.

Plain pydantic JSON of the same records (what `Run.save` wrote) passes through unchanged, but
for `text_in`.
"""

from __future__ import annotations

from typing import Any

from convlab.model._ids import case_thread, trace_of, turn_id_of

__all__ = ["upgrade"]

_REPLY, _IDS, _NO_EFFECTS = 1, 2, 4


def upgrade(data: Any) -> Any:
    """A format-1 result dict as format 2 writes it (a dict already so is left as it is;
    anything else is given back for the decoder to refuse)."""
    if not isinstance(data, dict):
        return data
    data.pop("_r", None)
    thread = data.pop("_th", None)
    if isinstance(thread, list) and len(thread) == 2:
        variant = tuple((data.get("variant") or {}).items())
        thread = case_thread(thread[0], data.get("case_id"), variant, thread[1])
    if type(data.get("assertions")) is list:
        data["assertions"] = _unpacked(data["assertions"], None)
    for i, turn in enumerate(data.get("turns") or ()):
        if not isinstance(turn, dict):
            continue
        turn.setdefault("index", i)
        obs = turn.get("observation")
        if isinstance(obs, dict):
            _observation(obs, turn, thread)
        if type(turn.get("assertions")) is list:
            reply = obs.get("text") if isinstance(obs, dict) else None
            turn["assertions"] = _unpacked(turn["assertions"], reply)
    return data


def _observation(obs: dict[str, Any], turn: dict[str, Any], thread: Any) -> None:
    flags = obs.pop("_o", 0) | (_REPLY if obs.pop("_m", None) else 0)
    if obs.pop("_d", None):
        flags |= _IDS
    if "text_in" in obs:
        index = obs.pop("text_in")
        try:
            obs["text"] = obs["messages"][index]["content"]
        except (LookupError, TypeError):
            obs["text_in"] = index  # a hand-edited line: the decoder names the field
    if flags & _REPLY:
        obs["messages"] = [{"role": "assistant", "content": obs.get("text")}]
    if flags & _NO_EFFECTS:
        obs["effects"] = {}
    if thread is not None and "thread_id" not in obs:
        obs["thread_id"] = thread
    if flags & _IDS and isinstance(obs.get("thread_id"), str):
        step = turn.get("step_id") or str(turn.get("index", 0))
        obs["turn_id"] = turn_id_of(obs["thread_id"], step)
        obs["trace_id"] = trace_of(obs["turn_id"])


def _unpacked(checks: list[Any], reply: Any) -> list[Any]:
    """Assertion results written as arrays, as dicts again (a dict stays as it is)."""
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
        else:  # not the array form: the decoder says what is wrong with it
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
