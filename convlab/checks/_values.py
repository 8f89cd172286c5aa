"""Value helpers every check family shares: equality, JSON text, types, what "output" means.

The JSONL (Yao) checks compare and search values the way Yao's Go code does, with the
decisions of docs/yao.md applied: objects compare order-insensitively, numbers compare as
numbers (5 == 5.0) and nothing is coerced (1 != "1", true != "true").
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from convlab.model.conversation import ToolCall
from convlab.model.records import Observation

MESSAGE_LIMIT = 200
"""Characters of a value a failure message prints before `...` (Yao's `truncateOutput` cut)."""

__all__ = [
    "MESSAGE_LIMIT",
    "combined_output",
    "cut",
    "deep_equal",
    "go_json",
    "go_shown",
    "go_type",
    "go_v",
    "is_empty",
    "is_number",
    "json_safe",
    "output_of",
    "reply_text",
    "same_value",
    "show",
    "to_text",
]


def is_number(value: Any) -> bool:
    """True for int and float, never for bool (a JSON boolean is not a number)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def deep_equal(a: Any, b: Any) -> bool:
    """JSON equality: objects in any key order, arrays in order, 5 == 5.0, no coercion.

    Deliberate difference `key-order` (docs/yao.md): Yao's validateOutput compares jsoniter
    JSON, whose map keys come in random order, so equal objects could fail by chance.
    """
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def same_value(a: Any, b: Any) -> bool:
    """Node's `isDeepStrictEqual` on JSON values (intention-kernel's `equals`): objects in any
    key order, arrays in order, no coercion, and numbers by JavaScript's SameValue: 5 is
    5.0, but -0 is not 0 (a JSON `-0` reads as `-0.0`) and NaN is NaN."""
    if is_number(a) and is_number(b):
        if a == b:
            return a != 0 or math.copysign(1, a) == math.copysign(1, b)
        return bool(a != a and b != b)  # NaN
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _go_value(value: Any) -> Any:
    """Pydantic models and tuples as plain JSON values; integral floats as ints (Go prints 5)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_none=True)
    if isinstance(value, dict):
        return {str(k): _go_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_go_value(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def go_json(value: Any) -> str:
    """JSON text as Go's encoding/json writes it: keys sorted, compact, `<>&` escaped."""
    try:
        text = json.dumps(
            _go_value(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )
    except (TypeError, ValueError):
        return str(value)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def json_safe(value: Any) -> Any:
    """A copy that JSON can store (results are saved): unknown objects become their repr."""
    try:
        return json.loads(json.dumps(_go_value(value), default=repr))
    except (TypeError, ValueError):
        return repr(value)


def to_text(value: Any) -> str:
    """What text checks search: a string as is, nothing as "", anything else as Go JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return go_json(value)


def show(value: Any, limit: int = MESSAGE_LIMIT) -> str:
    """A value for a failure message: JSON (strings quoted), cut at `limit` characters."""
    try:
        text = json.dumps(_go_value(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text, limit)


def go_v(value: Any) -> str:
    """Text as Go's `fmt.Sprintf("%v")` prints a JSON-decoded value (`tool_result` string
    matching reads it; Yao's messages print values with it).

    Go decodes every JSON number as a float64, so an integer prints as a float does:
    `1000000` is `1e+06` and `123456789` is `1.23456789e+08`, as in Yao. Objects print as
    `map[k:v ...]` with sorted keys, arrays as `[a b]`, strings bare, null as `<nil>`.
    """
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _go_float(_float64(value))
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        items = " ".join(f"{k}:{go_v(value[k])}" for k in sorted(value, key=str))
        return f"map[{items}]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_v(v) for v in value) + "]"
    return str(value)


def go_type(value: Any) -> str:
    """Go's `%T` of a JSON-decoded value: `float64`, `bool`, `string`, `<nil>`,
    `map[string]interface {}` or `[]interface {}` (Yao prints it in a `json_path` message)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if is_number(value):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    return type(value).__name__


def go_shown(value: Any, limit: int = MESSAGE_LIMIT) -> str:
    """`go_v` for a failure message, cut at `limit` characters as `show` cuts.

    Deliberate difference `message-cut` (docs/yao.md): Go prints the whole value; a long
    reply is never copied whole into each of its checks (the result's `actual` keeps it).
    """
    return cut(go_v(value), limit)


def cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` cut at `limit` characters with `...` after it, as Yao's `truncateOutput` cuts."""
    return text if len(text) <= limit else text[:limit] + "..."


def _float64(value: int) -> float:
    """The float64 Go's JSON decoder makes of an integer (rounded to 53 bits)."""
    try:
        return float(value)
    except OverflowError:  # past float64: Go's decoder refuses it; keep its sign
        return math.inf if value > 0 else -math.inf


def _go_float(value: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), which `%v` uses: the shortest digits, and the
    exponent form when the exponent is < -4 or >= 6 (the shortest form's precision for this
    choice is 6): 1e+06, 1.5e-05, 123456, 0.0001. The exponent has at least two digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exp = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits))
    point = len(text) + exp
    e = point - 1
    minus = "-" if sign else ""
    if e < -4 or e >= 6:
        mant = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mant}e{'+' if e >= 0 else '-'}{abs(e):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    if point >= len(text):
        return minus + text + "0" * (point - len(text))
    return f"{minus}{text[:point]}.{text[point:]}"


def is_empty(value: Any) -> bool:
    """Yao's emptiness: None, "", {} and [] are empty; 0 and false are not."""
    return value is None or (isinstance(value, str | dict | list | tuple) and len(value) == 0)


def _tool_summary(calls: list[ToolCall]) -> str:
    """The first non-empty `result.message`, else `[tool: action]` / `[tool: success]` items."""
    for call in calls:
        msg = call.result.get("message") if isinstance(call.result, dict) else None
        if isinstance(msg, str) and msg:
            return msg
    items = []
    for call in calls:
        name = call.name or "unknown"
        res = call.result if isinstance(call.result, dict) else {}
        if isinstance(res.get("action"), str):
            items.append(f"[{name}: {res['action']}]")
        elif isinstance(res.get("success"), bool):
            items.append(f"[{name}: {'success' if res['success'] else 'failed'}]")
        else:
            items.append(f"[{name}]")
    return " ".join(items)


def combined_output(obs: Observation) -> str:
    """Dynamic-mode output: the reply text, then every non-empty string tool `result.message`."""
    parts = [obs.text] if obs.text else []
    for call in obs.tool_calls:
        msg = call.result.get("message") if isinstance(call.result, dict) else None
        if isinstance(msg, str) and msg:
            parts.append(msg)
    return "\n".join(parts)


def output_of(obs: Observation, scope: str = "turn") -> Any:
    """What a JSONL text check sees as "output" (Yao's `extractOutput`, agent/test/runner.go).

    Standard scope: the structured `data` when non-empty, else the text when non-empty,
    else a summary of the tool results, else None. Tool calls are never part of the text.
    Checkpoint scope (`scope == "checkpoint"`): the combined output (text + tool messages).
    """
    if scope == "checkpoint":
        return combined_output(obs)
    if not is_empty(obs.data):
        return obs.data
    if obs.text:
        return obs.text
    if obs.tool_calls:
        return _tool_summary(obs.tool_calls)
    return None


def reply_text(obs: Observation) -> str:
    """The reply as one text for judges, metrics and graders: text, else data as JSON."""
    if obs.text:
        return obs.text
    if not is_empty(obs.data):
        return json.dumps(_go_value(obs.data), ensure_ascii=False, default=str)
    return ""
