"""What changed in the agent between two runs: the settings that differ, and a system prompt
compared word by word.

Settings are `Run.agent_settings` (spec, model, endpoint, system prompt, params, tools, ...),
flattened so that a nested value has a dotted name (`params.temperature`). A word diff splits
both texts into words and the whitespace between them and aligns them with difflib; the views
(convlab.notebook, convlab.report) escape every piece before they mark it up.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

    from convlab.model.experiment import Experiment

__all__ = [
    "CHANGE_COLUMNS",
    "NOT_SET",
    "PROMPT_KEYS",
    "change_text",
    "experiment_changes",
    "flatten",
    "settings_diff",
    "word_diff",
    "word_diff_counts",
    "word_diff_shown",
    "word_diff_text",
]

NOT_SET = "(not set)"
"""How a setting one side does not have is shown."""
PROMPT_KEYS = frozenset({"system", "instructions", "prompt", "system_prompt"})
"""Settings holding a prompt: shown as a word diff rather than two long texts."""
CHANGE_COLUMNS = ("setting", "before", "after")

Op = Literal["equal", "delete", "insert"]
_TOKENS = re.compile(r"^\s+|\S+\s*")


def flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level with dotted names (`{"params": {"t": 0}}` -> `params.t`);
    lists and other values are kept whole."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(
            json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
        )
    except (TypeError, ValueError):
        return bool(a == b)


def settings_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The settings whose values differ, as `{"setting", "before", "after"}` rows (a side
    that lacks one shows `NOT_SET`), in the order `before` lists them, then `after`'s new ones.
    """
    a, b = flatten(before), flatten(after)
    names = list(a) + [k for k in b if k not in a]
    return [
        {"setting": k, "before": a.get(k, NOT_SET), "after": b.get(k, NOT_SET)}
        for k in names
        if k not in a or k not in b or not _same(a[k], b[k])
    ]


def _words(text: str) -> list[str]:
    return _TOKENS.findall(text)


def word_diff(before: str | None, after: str | None) -> list[tuple[Op, str]]:
    """`after` against `before`, word by word: runs of `equal`, `delete` (only in before) and
    `insert` (only in after) text that put together give each side back exactly."""
    a, b = _words(before or ""), _words(after or "")
    out: list[tuple[Op, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.append(("equal", "".join(a[i1:i2])))
            continue
        removed, added = "".join(a[i1:i2]), "".join(b[j1:j2])
        r_core, a_core = removed.rstrip(), added.rstrip()
        tail = removed[len(r_core) :]
        if removed and added and tail and tail == added[len(a_core) :]:
            # a word replaced by another: the space after them is common to both sides
            out += [("delete", r_core), ("insert", a_core), ("equal", tail)]
            continue
        if removed:
            out.append(("delete", removed))
        if added:
            out.append(("insert", added))
    return out


def word_diff_shown(before: str | None, after: str | None) -> list[tuple[Op, str]]:
    """`word_diff` as a reader sees it: where removed words run straight into added ones
    (`expense` replaced by `Expense`, or `Be short.` by `You are ...`), one space of plain
    text stands between the two, so they read `expense Expense`, not `expenseExpense`."""
    out: list[tuple[Op, str]] = []
    for op, text in word_diff(before, after):
        after_delete = op == "insert" and bool(out) and out[-1][0] == "delete"
        if after_delete and not (out[-1][1][-1:].isspace() or text[:1].isspace()):
            out.append(("equal", " "))
        out.append((op, text))
    return out


def word_diff_counts(before: str | None, after: str | None) -> tuple[int, int]:
    """How many words the diff removes and adds."""
    removed = added = 0
    for op, text in word_diff(before, after):
        if op == "delete":
            removed += len(text.split())
        elif op == "insert":
            added += len(text.split())
    return removed, added


def word_diff_text(before: str | None, after: str | None) -> str:
    """The word diff as plain text, wdiff's way: `[-removed-] {+added+}`."""
    marks = {"equal": ("", ""), "delete": ("[-", "-]"), "insert": ("{+", "+}")}
    return "".join(
        marks[op][0] + text + marks[op][1] for op, text in word_diff_shown(before, after)
    )


def _shown(value: Any, limit: int = 80) -> str:
    if value is NOT_SET:
        return str(value)
    text: str = (
        value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    )
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def change_text(row: Mapping[str, Any]) -> str:
    """One changed setting in words: `params.temperature 0.2 → 0.7`, or for a prompt
    `system: 3 words removed, 12 added`."""
    name, before, after = str(row["setting"]), row["before"], row["after"]
    if (
        name.rsplit(".", 1)[-1] in PROMPT_KEYS
        and isinstance(before, str)
        and isinstance(after, str)
    ):
        removed, added = word_diff_counts(before, after)
        return f"{name}: {removed} word(s) removed, {added} added"
    return f"{name} {_shown(before)} → {_shown(after)}"


def experiment_changes(exp: Experiment, baseline: str) -> pd.DataFrame:
    """`Experiment.changes()`: per variant but the baseline, the settings that differ from the
    baseline's (`agent_variant`, `setting`, `before` = the baseline's, `after`)."""
    import pandas as pd

    from convlab.model.experiment import VARIANT_COLUMN

    base = exp.runs[baseline].agent_settings
    rows = [
        {VARIANT_COLUMN: name, **row}
        for name, run in exp.runs.items()
        if name != baseline
        for row in settings_diff(base, run.agent_settings)
    ]
    out = pd.DataFrame.from_records(rows, columns=[VARIANT_COLUMN, *CHANGE_COLUMNS])
    out.attrs["baseline"] = baseline
    return out
