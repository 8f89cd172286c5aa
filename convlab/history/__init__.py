"""The history of runs: every run is recorded in a local SQLite database.

`cl.history(suite=None, limit=100, experiment=None)` is a DataFrame of the recorded runs,
newest first (`suite`: a suite's name, its path or a folder above it, or a Suite), shown in a
notebook as an interactive table; `cl.history().plot()` draws the pass rate and the cost of
each try over time. `cl.load_run(history_id)` brings a run back.

The database is `history.db` in `$CONVLAB_HOME`, else in `~/.convlab`. Each row keeps the run's
times and status, the suite (name, path, fingerprint), the agent and its settings (model,
parameters, the full system prompt; secrets masked), the summary figures (total, passed,
failed, errors, pass rate, cost), `runs` and `parallel`, an experiment and variant name, and
where the results are: the run's store, else a gzip copy in `runs/` beside the database (and
a later `.json`/`.jsonl` save). `history=False` (CLI: `--no-history`) records nothing.
"""

from __future__ import annotations

import os
import sys
import types
from typing import TYPE_CHECKING

from convlab.errors import HistoryError
from convlab.history._db import SCHEMA_VERSION, db_path, home
from convlab.history._record import Entry, locate, note_saved, record_run, runs_folder

if TYPE_CHECKING:
    from convlab.history.frame import History
    from convlab.model.suite import Suite

__all__ = [
    "SCHEMA_VERSION",
    "Entry",
    "HistoryError",
    "db_path",
    "home",
    "locate",
    "note_saved",
    "past_runs",
    "record_run",
    "runs_folder",
]


def past_runs(
    suite: str | os.PathLike[str] | Suite | None = None,
    limit: int | None = 100,
    experiment: str | None = None,
) -> History:
    """The recorded runs, newest first, as a `History` DataFrame (what `cl.history()` is).

    Args:
        suite: Only the runs of this suite: its name, the path it was loaded from (or a
            folder above it), or a Suite.
        limit: The most runs to return (None: all).
        experiment: Only the runs recorded under this experiment name.

    Raises:
        HistoryError: When the database is damaged or was written by a newer convlab.
    """
    from convlab.history.frame import past_runs as frame

    return frame(suite, limit, experiment)


class _History(types.ModuleType):
    """This module, callable: `cl.history(...)` is `past_runs(...)`."""

    def __call__(
        self,
        suite: str | os.PathLike[str] | Suite | None = None,
        limit: int | None = 100,
        experiment: str | None = None,
    ) -> History:
        return past_runs(suite, limit, experiment)


_History.__call__.__doc__ = past_runs.__doc__
sys.modules[__name__].__class__ = _History
