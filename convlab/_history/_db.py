"""The history database: one SQLite file, `history.db` in CONVLAB_HOME (default ~/.convlab).

One table, `runs`, a row per recorded run. The schema's version is the file's
`PRAGMA user_version`: a file this convlab has not made (another program's database, or
garbage) and a file of a newer schema are refused with a HistoryError naming the file and
what to do. Several processes may write at once: the file is in WAL mode, a writer waits
for another's lock (the busy timeout), and every write is one `BEGIN IMMEDIATE` transaction.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from convlab._files import folder_for
from convlab.errors import HistoryError

__all__ = [
    "COLUMNS",
    "SCHEMA_VERSION",
    "connect",
    "db_path",
    "home",
    "insert",
    "select",
    "update_saved",
]

SCHEMA_VERSION = 1
"""The `PRAGMA user_version` this code writes and reads; a newer file is refused."""

BUSY_TIMEOUT_S = 30.0
"""How long a writer waits for another process's write to end before giving up."""

COLUMNS: dict[str, str] = {
    "run_id": "TEXT NOT NULL UNIQUE",
    "recorded_at": "TEXT NOT NULL",
    "started_at": "TEXT",
    "finished_at": "TEXT",
    "status": "TEXT NOT NULL",
    "suite": "TEXT",
    "suite_path": "TEXT",
    "fingerprint": "TEXT",
    "agent": "TEXT",
    "model": "TEXT",
    "agent_settings": "TEXT",
    "total": "INTEGER",
    "passed": "INTEGER",
    "failed": "INTEGER",
    "errors": "INTEGER",
    "pass_rate": "REAL",
    "cost_usd": "REAL",
    "runs": "INTEGER",
    "parallel": "INTEGER",
    "experiment": "TEXT",
    "variant": "TEXT",
    "results_path": "TEXT",
    "results_kind": "TEXT",
    "saved_path": "TEXT",
    "summary": "TEXT",
    "settings": "TEXT",
    "convlab_version": "TEXT",
}
"""The `runs` table's columns after its integer `id` (schema version 1). JSON columns
(`agent_settings`, `summary`, `settings`) hold JSON text."""

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    + ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
    + ")",
    "CREATE INDEX IF NOT EXISTS runs_suite ON runs (suite)",
    "CREATE INDEX IF NOT EXISTS runs_suite_path ON runs (suite_path)",
    "CREATE INDEX IF NOT EXISTS runs_experiment ON runs (experiment)",
]


def home() -> Path:
    """convlab's own folder: `$CONVLAB_HOME`, else `~/.convlab`."""
    given = os.environ.get("CONVLAB_HOME", "").strip()
    return Path(given).expanduser() if given else Path.home() / ".convlab"


def db_path() -> Path:
    """The history database's file."""
    return home() / "history.db"


def _damaged(path: Path, why: object) -> HistoryError:
    return HistoryError(
        f"{path} is not a readable convlab history database ({why}). Move it away (e.g. rename "
        "it to history.db.bad) and convlab starts a new one there; or set CONVLAB_HOME to "
        "another folder, or run with history=False (CLI: --no-history) to record nothing"
    )


def _error(path: Path, exc: sqlite3.Error) -> HistoryError:
    """A HistoryError for what sqlite said: a lock held too long, else a damaged file."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return HistoryError(
            f"{path} stayed locked by another process for {BUSY_TIMEOUT_S:g} s ({text}); "
            "try again when it is done"
        )
    if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text:
        return HistoryError(f"{path} cannot be opened ({text}): check the folder's permissions")
    return _damaged(path, text)


T = TypeVar("T")


def _locked(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def retrying(step: Callable[[], T]) -> T:
    """`step()`, again while another process holds the lock, up to BUSY_TIMEOUT_S: sqlite's
    own busy wait does not cover every case (a WAL file being made or removed by another
    connection can answer "locked" at once)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() > deadline:
                raise
        time.sleep(random.uniform(0.005, 0.05))


def _open(path: Path) -> sqlite3.Connection:
    try:
        folder_for(path)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except OSError as exc:
        raise HistoryError(f"{path} cannot be opened: {exc.strerror or exc}") from None
    except sqlite3.Error as exc:
        raise _error(path, exc) from None
    return conn


def _prepare(conn: sqlite3.Connection, path: Path) -> None:
    """Check the file's schema version and make or upgrade its tables."""
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise HistoryError(
            f"{path} was written by a newer convlab (history schema version {version}; this "
            f"convlab reads up to {SCHEMA_VERSION}). Upgrade convlab, or set CONVLAB_HOME to "
            "another folder, or run with history=False (CLI: --no-history)"
        )
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")  # kept in the file: set once
    conn.execute("PRAGMA synchronous = NORMAL")  # WAL: a crash never corrupts, commits stay fast
    if version == SCHEMA_VERSION:
        return
    with transaction(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # another may have made it
        if version == 0:
            tables = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall()
            if tables:
                names = ", ".join(sorted(t[0] for t in tables)[:5])
                raise _damaged(path, f"it holds another program's tables: {names}")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at once (`BEGIN IMMEDIATE`: a writer waits its turn
    instead of failing halfway); rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextlib.contextmanager
def connect(
    path: Path | None = None, *, create: bool = True
) -> Iterator[sqlite3.Connection | None]:
    """A checked connection to the history database (None when `create` is False and there is
    no file yet). Every sqlite error inside becomes a HistoryError naming the file."""
    path = path or db_path()
    if not create and not path.exists():
        yield None
        return
    conn = _open(path)
    try:
        retrying(lambda: _prepare(conn, path))
        yield conn
    except sqlite3.Error as exc:
        raise _error(path, exc) from None
    finally:
        conn.close()


def insert(conn: sqlite3.Connection, row: dict[str, Any]) -> int:
    """Add (or, for a run id already there, update) one run's row, in one transaction; its
    history id."""
    names = list(row)
    marks = ", ".join("?" for _ in names)
    kept = ("experiment", "variant", "saved_path")  # a second record keeps what it does not know
    updates = ", ".join(
        f"{n} = COALESCE(excluded.{n}, {n})" if n in kept else f"{n} = excluded.{n}"
        for n in names
        if n != "run_id"
    )
    sql = (
        f"INSERT INTO runs ({', '.join(names)}) VALUES ({marks}) "
        f"ON CONFLICT(run_id) DO UPDATE SET {updates}"
    )

    def write() -> int:
        with transaction(conn):  # no RETURNING: it needs SQLite 3.35
            conn.execute(sql, [row[n] for n in names])
            found = conn.execute("SELECT id FROM runs WHERE run_id = ?", (row["run_id"],))
            return int(found.fetchone()[0])

    return retrying(write)


def update_saved(run_id: str, saved: str, path: Path | None = None) -> bool:
    """Note where a recorded run was saved; False when there is no database or no such run."""
    with connect(path, create=False) as conn:
        if conn is None:
            return False

        def write() -> bool:
            with transaction(conn):
                sql = "UPDATE runs SET saved_path = ? WHERE run_id = ?"
                return conn.execute(sql, (saved, run_id)).rowcount > 0

        return retrying(write)


def select(
    where: str = "", params: Sequence[Any] = (), limit: int | None = None, path: Path | None = None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The column names and rows of `runs` matching `where` (SQL, with `params`), newest
    first; no rows when there is no database yet."""
    sql = "SELECT * FROM runs" + (f" WHERE {where}" if where else "") + " ORDER BY id DESC"
    args = list(params)
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    with connect(path, create=False) as conn:
        if conn is None:
            return ["id", *COLUMNS], []
        cur = retrying(lambda: conn.execute(sql, args))
        return [d[0] for d in cur.description], retrying(cur.fetchall)
