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
The columns are `HistoryRow`'s fields (convlab._history.row), declared once.

A run is recorded off the path the user waits on: it returns when its last result is in, and
a background thread writes its entry (`cl.history()` waits for this process's recordings;
a process that ends waits for them at exit). The history keeps the newest `history_keep` runs
(default HISTORY_KEEP), deleting the oldest entries and their copies in `runs/`; `convlab
history --prune --keep N` does so at once. The folder convlab makes is its owner's only
(0700), and so are the database and the copies (0600).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from convlab._history._db import HISTORY_KEEP, SCHEMA_VERSION, db_path, home
from convlab._history._record import (
    Entry,
    locate,
    note_saved,
    prune,
    record_later,
    record_run,
    runs_folder,
)
from convlab._history.row import HistoryRow
from convlab.errors import HistoryError

if TYPE_CHECKING:
    from convlab._history.frame import History
    from convlab.model.suite import Suite

__all__ = [
    "HISTORY_KEEP",
    "SCHEMA_VERSION",
    "Entry",
    "HistoryError",
    "HistoryRow",
    "db_path",
    "history",
    "home",
    "locate",
    "note_saved",
    "past_runs",
    "prune",
    "record_later",
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
    from convlab._history.frame import past_runs as frame

    return frame(suite, limit, experiment)


history = past_runs
"""`cl.history(suite=None, limit=100, experiment=None)`: `past_runs`."""
