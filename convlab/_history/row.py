"""`HistoryRow`: one recorded run, the one declaration of the history's columns.

The database's columns (`_db`), the row recorded from a run (`_record`), the columns of
`cl.history()` (`frame`), the fields of `convlab history --json` and the command's table
(`convlab._cli_history`) all come from this record: adding a field here adds a column to
each (the database's upgrade adds it to a file made before). What a table shows is a named
subset of the fields (`NOTEBOOK_TABLE`, `CLI_TABLE`); a field's `Meta(title=...)` is its
heading there.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union

import msgspec

__all__ = [
    "CLI_TABLE",
    "FIELDS",
    "FRAME_COLUMNS",
    "HIDDEN",
    "NOTEBOOK_TABLE",
    "WHEN_GIVEN",
    "HistoryRow",
    "Kind",
    "column_kind",
    "required",
    "title",
]

_HIDDEN = {"frame": False}
HIDDEN = msgspec.Meta(extra=_HIDDEN)
"""A field kept in the database only: not a column of `cl.history()` nor of `--json`."""
_TIME = {"time": True}
Time = Annotated[str | None, msgspec.Meta(extra=_TIME)]
"""An ISO 8601 time with its offset; a timezone-aware timestamp in the frame."""
_SPARSE = {"sparse": True}
Sparse = Annotated[str | None, msgspec.Meta(extra=_SPARSE)]
"""A text that most runs leave empty: the tables leave its column out when no row has one."""


class HistoryRow(msgspec.Struct, kw_only=True):
    """One run as the history records it (masked: no secret is ever in it).

    Fields are in the order `cl.history()` shows them. The JSON values (dicts) are kept as
    JSON text in the database and come back as dicts.
    """

    started_at: Annotated[Time, msgspec.Meta(title="when")] = None
    suite: str | None = None
    """The suite's name (else its id)."""
    agent: str | None = None
    """The agent's description (`run.agent`)."""
    model: str | None = None
    """The model the agent names, when it names one."""
    experiment: Sparse = None
    """The experiment the run was a variant of."""
    variant: Sparse = None
    """The variant's name in that experiment."""
    status: Literal["running", "completed", "cancelled", "failed"]
    total: int | None = None
    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    pass_rate: Annotated[float | None, msgspec.Meta(title="pass rate")] = None
    """In percent: the mean of the case pass rates, as in `run.summary`."""
    cost_usd: Annotated[float | None, msgspec.Meta(title="cost")] = None
    """In US dollars; missing when a call's price is not known."""
    runs: int | None = None
    parallel: int | None = None
    run_id: str
    """The run's own id (`run.id`); recording a run again updates its row."""
    suite_path: str | None = None
    """The absolute path the suite was read from (its file, or the folder of its files)."""
    fingerprint: str | None = None
    """The hash of the suite's definition."""
    results_path: str | None = None
    """Where the results are: the run's store, else a gzip copy in `runs/`."""
    saved_path: str | None = None
    """Where the run was last saved as `.json` or `.jsonl`."""
    agent_settings: dict[str, Any] = {}
    """What the agent is made of: spec, model, system prompt, parameters (secrets masked)."""
    settings: dict[str, Any] = {}
    """The run's settings as given to `run()` (secrets masked)."""
    recorded_at: Annotated[str, HIDDEN]
    """When the row was written (this machine's time, with its offset)."""
    finished_at: Annotated[str | None, HIDDEN, msgspec.Meta(extra=_TIME)] = None
    results_kind: Annotated[Literal["store", "copy"] | None, HIDDEN] = None
    """What `results_path` is: the run's `store`, or a `copy` kept in `runs/`."""
    summary: Annotated[dict[str, Any], HIDDEN] = {}
    """`run.summary`, whole."""
    convlab_version: Annotated[str, HIDDEN] = ""


Kind = Literal["text", "integer", "real", "json", "time"]
"""How a field is stored (SQLite's TEXT, INTEGER or REAL; JSON and times as TEXT) and shown."""

FIELDS: dict[str, msgspec.structs.FieldInfo] = {
    f.name: f for f in msgspec.structs.fields(HistoryRow)
}
"""The record's fields by name, in order."""


def _metas(name: str) -> list[msgspec.Meta]:
    hint: Any = FIELDS[name].type if name in FIELDS else None
    metas: list[msgspec.Meta] = []
    while typing.get_origin(hint) is Annotated:
        hint, *given = typing.get_args(hint)
        metas += [m for m in given if isinstance(m, msgspec.Meta)]
    return metas


def _extra(name: str) -> dict[str, Any]:
    """The `Meta(extra=...)` of field `name`, merged."""
    out: dict[str, Any] = {}
    for meta in _metas(name):
        out.update(meta.extra or {})
    return out


def title(name: str) -> str:
    """The heading of field (or frame column) `name` in a table."""
    given = [m.title for m in _metas(name) if m.title]
    return given[0] if given else name


def _bare(hint: Any) -> Any:
    """`hint` without Annotated and without None."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in (Union, types.UnionType):
        kept = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = kept[0] if len(kept) == 1 else Any
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def column_kind(name: str) -> Kind:
    """How field `name` is stored and shown in the frame."""
    if _extra(name).get("time"):
        return "time"
    hint = _bare(FIELDS[name].type)
    origin = typing.get_origin(hint) or hint
    if origin in (dict, list):
        return "json"
    if hint in (bool, int):
        return "integer"
    if hint is float:
        return "real"
    return "text"


def required(name: str) -> bool:
    """Whether field `name` has no default: its column is NOT NULL."""
    return FIELDS[name].required


FRAME_COLUMNS: tuple[str, ...] = (
    "id",
    *(name for name in FIELDS if _extra(name).get("frame", True)),
    "duration_s",
)
"""The columns of `cl.history()` and the fields of `convlab history --json`: the history id
(what `cl.load_run(id)` takes), every field of `HistoryRow` not marked HIDDEN, and
`duration_s` (finished minus started, in seconds)."""

WHEN_GIVEN = tuple(name for name in FIELDS if _extra(name).get("sparse"))
"""Columns a table shows only when some row has a value."""

NOTEBOOK_TABLE = (
    "id",
    "started_at",
    "suite",
    "agent",
    "experiment",
    "variant",
    "status",
    "total",
    "passed",
    "failed",
    "errors",
    "pass_rate",
    "cost_usd",
)
"""The columns of `cl.history()`'s interactive table in a notebook (the frame has them all)."""

CLI_TABLE = tuple(c for c in NOTEBOOK_TABLE if c not in ("passed", "failed", "errors"))
"""The columns of `convlab history`'s text table (`--json` has every frame column)."""
