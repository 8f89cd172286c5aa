"""`cl.history()`: the recorded runs as a DataFrame, newest first, that a notebook shows as
an interactive table and `.plot()` draws over time."""

from __future__ import annotations

import json
import os
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from convlab._history import _background, _db
from convlab._history.row import FIELDS, FRAME_COLUMNS, NOTEBOOK_TABLE, WHEN_GIVEN, column_kind

if TYPE_CHECKING:
    from convlab.model.suite import Suite

__all__ = ["FRAME_COLUMNS", "History", "past_runs"]


class History(pd.DataFrame):
    """Recorded runs, newest first: one row per run (`id` is what `cl.load_run(id)` takes).

    In a notebook it shows as an interactive table; `.plot()` draws the pass rate and the cost
    of each try over time. Filters and slices of it are History frames too.
    """

    @property
    def _constructor(self) -> type[History]:
        return History

    def plot(self, suite: str | None = None, by: str = "agent") -> Any:  # type: ignore[override]
        """The pass rate and the cost of each run over time, one point per run and one line
        per agent (`by="variant"`: per experiment variant; `by="suite"`: per suite), a
        Plotly figure. `suite=`: only that suite's runs, by name or path.

        It replaces pandas' `.plot` accessor on this frame: `pd.DataFrame(h).plot` has it.
        """
        from convlab.model import faces

        frame = self if suite is None else self[_matches(self, suite)]
        if suite is not None and frame.empty:
            raise ValueError(f"no run of suite {suite!r} in this history frame")
        return faces.history_figure(frame, by)

    def table(self) -> Any:
        """The runs as an interactive table (sortable, searchable, offline)."""
        from convlab.model import faces

        shown = [c for c in NOTEBOOK_TABLE if c in self.columns]
        shown = [c for c in shown if c not in WHEN_GIVEN or self[c].notna().any()]
        where = str(self.attrs.get("path", ""))
        note = f"Recorded in {where}; cl.load_run(id) brings a run back." if where else None
        frame = pd.DataFrame(self[shown])
        if "started_at" in frame.columns:  # this machine's time, to the second (sorts as text)
            local = datetime.now().astimezone().tzinfo
            when = pd.to_datetime(frame["started_at"], utc=True).dt.tz_convert(local)
            frame["started_at"] = when.dt.strftime("%Y-%m-%d %H:%M:%S").fillna("")
        return faces.frame_table(frame, "History · past runs", description=note)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = self.table()._repr_mimebundle_(include, exclude)
        return bundle


def _matches(frame: pd.DataFrame, suite: str) -> pd.Series[bool]:
    """Rows of the suite named `suite`, or read from the path `suite` (or below it)."""
    path = os.path.abspath(os.path.expanduser(suite))
    paths = frame["suite_path"].fillna("")
    below = paths.map(lambda p: p == path or p.startswith(path.rstrip(os.sep) + os.sep))
    return (frame["suite"] == suite) | below


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _suite_filter(suite: str | os.PathLike[str] | Suite) -> tuple[str, list[Any]]:
    """SQL and parameters that keep the runs of `suite`: its name, or its path (or a file
    below that folder)."""
    from convlab.model.suite import Suite

    if isinstance(suite, Suite):
        names = [suite.name or suite.id]
        paths = sorted({os.path.abspath(s.file) for s in suite.sources})
    else:
        names = [str(suite)]
        paths = [os.path.abspath(os.path.expanduser(os.fspath(suite)))]
    parts = ["suite = ?"] * len(names)
    params: list[Any] = list(names)
    for path in paths:
        folder = path.rstrip(os.sep) + os.sep
        escaped = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        parts += ["suite_path = ?", "suite_path LIKE ? ESCAPE '\\'"]
        params += [path, escaped + "%"]
    return "(" + " OR ".join(parts) + ")", params


def past_runs(
    suite: str | os.PathLike[str] | Suite | None = None,
    limit: int | None = 100,
    experiment: str | None = None,
) -> History:
    """The recorded runs, newest first (see `convlab._history`)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit={limit!r}: use a positive integer, or None for every run")
    where, params = [], []
    if suite is not None:
        sql, args = _suite_filter(suite)
        where.append(sql)
        params += args
    if experiment is not None:
        where.append("experiment = ?")
        params.append(experiment)
    _background.wait()  # this process's runs that are still being recorded
    names, rows = _db.select(" AND ".join(where), params, limit)
    raw = pd.DataFrame.from_records(rows, columns=names)
    for name in ("id", *FIELDS):  # a file that could not be upgraded: its missing columns
        if name not in raw.columns:
            raw[name] = None
    out = History({c: raw[c] for c in FRAME_COLUMNS if c in raw.columns})
    for name in ("id", *(f for f in FRAME_COLUMNS if f in FIELDS)):
        kind = "integer" if name == "id" else column_kind(name)
        if kind == "time":
            out[name] = pd.to_datetime(raw[name], utc=True, errors="coerce", format="ISO8601")
        elif kind == "json":
            out[name] = [_loads(v) for v in raw[name]]
        elif kind == "integer":
            out[name] = pd.to_numeric(raw[name], errors="coerce").astype("Int64")
        elif kind == "real":
            out[name] = pd.to_numeric(raw[name], errors="coerce").astype("float64")
    finished = pd.to_datetime(raw["finished_at"], utc=True, errors="coerce", format="ISO8601")
    out["duration_s"] = (finished - out["started_at"]).dt.total_seconds().astype("float64")
    out = History(out[list(FRAME_COLUMNS)])
    out.attrs["path"] = str(_db.db_path())
    return out
