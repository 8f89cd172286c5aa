"""The history database: one SQLite file, `history.db` in CONVLAB_HOME (default ~/.convlab).

One table, `runs`, a row per recorded run, its columns those of `HistoryRow` (`row.py`). The
schema's version is the file's `PRAGMA user_version`: a file this convlab has not made
(another program's database, or garbage) is refused, untouched, and a file of a newer schema
too, with a HistoryError naming the file and what to do. An older file is upgraded when it
is opened: the record's columns it lacks are added. Several processes may write at once: the
file is in WAL mode, a writer waits for another's lock (the busy timeout), and every write is
one `BEGIN IMMEDIATE` transaction. The folder convlab makes for it is its owner's only
(0700), and so is the file (0600): it holds full system prompts and settings.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from convlab._files import folder_for
from convlab._history.row import FIELDS, HistoryRow, column_kind, required
from convlab.errors import HistoryError

__all__ = [
    "COLUMNS",
    "HISTORY_KEEP",
    "SCHEMA_VERSION",
    "connect",
    "db_path",
    "home",
    "insert",
    "private_folder",
    "prune",
    "select",
    "update_saved",
]

SCHEMA_VERSION = 2
"""The `PRAGMA user_version` this code writes and reads; a newer file is refused.

1: the first history. 2: the columns are `HistoryRow`'s; opening a file of an older version
(or one that lacks a column of the record) adds what it lacks. A step that adds a field adds
nothing else: the upgrade compares the file's columns with the record's at every open."""

HISTORY_KEEP = 500
"""How many runs the history keeps by default (`history_keep`): recording a run deletes the
oldest entries past it, and their copies in `runs/`."""

BUSY_TIMEOUT_S = 30.0
"""How long a writer waits for another process's write to end before giving up."""

KEY = "run_id"
"""The column that names a run: recording a run again updates its row."""

_SQL_TYPES = {"text": "TEXT", "time": "TEXT", "json": "TEXT", "integer": "INTEGER", "real": "REAL"}

COLUMNS: dict[str, str] = {
    name: _SQL_TYPES[column_kind(name)]
    + (" NOT NULL" if required(name) else "")
    + (" UNIQUE" if name == KEY else "")
    for name in FIELDS
}
"""The `runs` table's columns after its integer `id`: `HistoryRow`'s fields (JSON fields
hold JSON text)."""

_INDEXES = [
    "CREATE INDEX IF NOT EXISTS runs_suite ON runs (suite)",
    "CREATE INDEX IF NOT EXISTS runs_suite_path ON runs (suite_path)",
    "CREATE INDEX IF NOT EXISTS runs_experiment ON runs (experiment)",
]
_CREATE = (
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    + ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
    + ")"
)


def home() -> Path:
    """convlab's own folder: `$CONVLAB_HOME`, else `~/.convlab`."""
    given = os.environ.get("CONVLAB_HOME", "").strip()
    return Path(given).expanduser() if given else Path.home() / ".convlab"


def db_path() -> Path:
    """The history database's file."""
    return home() / "history.db"


def private_folder(folder: Path) -> Path:
    """`folder`, made if missing readable by its owner only (0700); one that exists keeps
    its mode (CONVLAB_HOME may name a folder the user shares on purpose)."""
    if not folder.is_dir():
        folder_for(folder)  # its parents; a clear error when a part of the path is a file
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    return folder


def private_file(path: Path) -> None:
    """Make `path` (empty) readable and writable by its owner only, or narrow the mode of
    the one there to that (a history file an earlier convlab made with the umask's mode)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            with contextlib.suppress(PermissionError):  # another user's file: theirs to mind
                os.chmod(path, 0o600)


def _damaged(path: Path, why: object) -> HistoryError:
    return HistoryError(
        f"{path} is not a readable convlab history database ({why}). Move it away (e.g. rename "
        "it to history.db.bad) and convlab starts a new one there; or set CONVLAB_HOME to "
        "another folder, or run with history=False (CLI: --no-history) to record nothing"
    )


def _full(path: Path, why: object) -> HistoryError:
    return HistoryError(
        f"the disk holding {path} is full ({why}): nothing was written to the history; free "
        "some space (the database itself is intact), or run with history=False (CLI: "
        "--no-history)"
    )


_SQLITE_FULL, _SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 10, 11, 14, 26
_SQLITE_READONLY = 8


def explain(path: Path, exc: BaseException) -> HistoryError:
    """A HistoryError that says what went wrong with the database `path`: a full disk, a
    lock held too long, a folder or file that cannot be opened or written, or a damaged file
    (only when sqlite says the file is not a database, or is corrupt)."""
    if isinstance(exc, HistoryError):
        return exc
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return _full(path, exc.strerror or exc)
        where = exc.filename or path
        return HistoryError(f"{where} cannot be written: {exc.strerror or exc}")
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == _SQLITE_FULL:
        return _full(path, text)
    if _locked(exc):
        return HistoryError(
            f"{path} stayed locked by another process for {BUSY_TIMEOUT_S:g} s ({text}); "
            "try again when it is done"
        )
    if primary == _SQLITE_CANTOPEN or "unable to open" in text:
        return HistoryError(f"{path} cannot be opened ({text}): check the folder's permissions")
    if primary == _SQLITE_READONLY:
        return HistoryError(f"{path} cannot be written ({text}): check its permissions")
    if primary == _SQLITE_IOERR:
        return HistoryError(f"{path} could not be read or written ({text}): check the disk")
    return _damaged(path, text)


T = TypeVar("T")


def _locked(exc: BaseException) -> bool:
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


def _open(path: Path, create: bool) -> sqlite3.Connection:
    try:
        if create:
            private_folder(path.parent)
            private_file(path)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise explain(path, exc) from None
    return conn


def _tables(conn: sqlite3.Connection) -> list[str]:
    sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    return sorted(t[0] for t in conn.execute(sql).fetchall())


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {r[1] for r in conn.execute("PRAGMA table_info(runs)").fetchall()}


def _check(conn: sqlite3.Connection, path: Path) -> int:
    """The file's schema version, once it is known to be a convlab history this convlab
    reads; nothing is written before (another program's file is left exactly as it was)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = _tables(conn)
    if tables and (version == 0 or "runs" not in tables):
        raise _damaged(path, f"it holds another program's tables: {', '.join(tables[:5])}")
    if version > SCHEMA_VERSION:
        raise HistoryError(
            f"{path} was written by a newer convlab (history schema version {version}; this "
            f"convlab reads up to {SCHEMA_VERSION}). Upgrade convlab, or set CONVLAB_HOME to "
            "another folder, or run with history=False (CLI: --no-history)"
        )
    return version


def _prepare(conn: sqlite3.Connection, path: Path) -> None:
    """Check the file's schema version and make or upgrade its table."""
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    version = _check(conn, path)
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")  # kept in the file: set once
    conn.execute("PRAGMA synchronous = NORMAL")  # WAL: a crash never corrupts, commits stay fast
    if version == SCHEMA_VERSION and set(COLUMNS) <= _columns(conn):
        return
    with transaction(conn):
        _check(conn, path)  # another process may have made or upgraded it meanwhile
        have = _columns(conn)
        if not have:
            conn.execute(_CREATE)
        for name in (n for n in COLUMNS if have and n not in have):
            kind = _SQL_TYPES[column_kind(name)]  # an added column allows NULL: old rows
            conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
        if have and KEY not in have:  # what UNIQUE says for a table made whole
            conn.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS runs_{KEY} ON runs ({KEY})")
        for statement in _INDEXES:
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
        with contextlib.suppress(sqlite3.Error):  # a full disk may have rolled it back
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
    conn = _open(path, create)
    try:
        retrying(lambda: _prepare(conn, path))
        yield conn
    except (sqlite3.Error, OSError) as exc:
        raise explain(path, exc) from None
    finally:
        conn.close()


def _value(name: str, value: Any) -> Any:
    """What column `name` holds for a field's value (JSON fields as JSON text)."""
    if column_kind(name) == "json":
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


def insert(conn: sqlite3.Connection, row: HistoryRow) -> int:
    """Add (or, for a run id already there, update) one run's row, in one transaction; its
    history id."""
    names = list(COLUMNS)
    marks = ", ".join("?" for _ in names)
    kept = ("experiment", "variant", "saved_path")  # a second record keeps what it does not know
    updates = ", ".join(
        f"{n} = COALESCE(excluded.{n}, {n})" if n in kept else f"{n} = excluded.{n}"
        for n in names
        if n != KEY
    )
    sql = (
        f"INSERT INTO runs ({', '.join(names)}) VALUES ({marks}) "
        f"ON CONFLICT({KEY}) DO UPDATE SET {updates}"
    )
    values = [_value(n, getattr(row, n)) for n in names]

    def write() -> int:
        with transaction(conn):  # no RETURNING: it needs SQLite 3.35
            conn.execute(sql, values)
            found = conn.execute(f"SELECT id FROM runs WHERE {KEY} = ?", (getattr(row, KEY),))
            return int(found.fetchone()[0])

    return retrying(write)


def prune(conn: sqlite3.Connection, keep: int) -> list[str]:
    """Delete every row but the newest `keep`, in one transaction; the `runs/` copies of the
    rows deleted (for the caller to remove: a run's own store is the user's, never
    touched)."""

    def write() -> list[str]:
        with transaction(conn):
            old = "SELECT id FROM runs ORDER BY id DESC LIMIT -1 OFFSET ?"
            copies = conn.execute(
                f"SELECT results_path FROM runs WHERE id IN ({old}) AND results_kind = 'copy'",
                (keep,),
            ).fetchall()
            conn.execute(f"DELETE FROM runs WHERE id IN ({old})", (keep,))
            return [c[0] for c in copies if c[0]]

    return retrying(write)


def update_saved(run_id: str, saved: str, path: Path | None = None) -> bool:
    """Note where a recorded run was saved; False when there is no database or no such run."""
    with connect(path, create=False) as conn:
        if conn is None:
            return False

        def write() -> bool:
            with transaction(conn):
                sql = f"UPDATE runs SET saved_path = ? WHERE {KEY} = ?"
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
