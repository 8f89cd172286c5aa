"""The history's files as its owner finds them: a run returns before its entry is written and
is recorded even when the process ends at once; a full disk, another program's file and a
file of the first schema are each handled as what they are; the files are private; the
history keeps the newest `history_keep` runs and `convlab history --prune` trims it."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import msgspec
import pytest

import convlab as cl
from convlab._history import _db
from convlab._history.row import FIELDS, FRAME_COLUMNS, HistoryRow
from convlab.errors import HistoryError

ROOT = Path(__file__).resolve().parent.parent
EXPENSE = ROOT / "examples" / "expense"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "convlab.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def _rows(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY id")]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


_SLOW_ROW = """
import time
from convlab._history import _record
_row = _record._row
def slow(*args, **kwargs):
    time.sleep({seconds})
    return _row(*args, **kwargs)
_record._row = slow
"""


def test_a_run_returns_before_its_entry_is_written_and_the_history_waits_for_it(home):
    from convlab._history import _record

    kept = _record._row

    def slow(*args, **kwargs):
        time.sleep(1.5)  # the figures of a big run take a while
        return kept(*args, **kwargs)

    _record._row = slow  # type: ignore[assignment]
    try:
        run = cl.run(EXPENSE, "demo:expense", progress=False)
        db = home / "history.db"
        assert run.id not in _rows(db)  # returned at once: the entry comes after
        h = cl.history()  # waits for this process's recordings
        assert list(h.run_id) == [run.id]
    finally:
        _record._row = kept  # type: ignore[assignment]


def test_a_process_that_ends_right_after_its_run_still_records_it(home, tmp_path):
    script = _SLOW_ROW.format(seconds=1.5) + textwrap.dedent(
        f"""
        import convlab as cl
        run = cl.run({str(EXPENSE)!r}, "demo:expense", progress=False)
        print(run.id, flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=180
    )
    assert out.returncode == 0, out.stderr
    assert _rows(home / "history.db") == [out.stdout.strip()]
    assert len(cl.load_run(1).results) == 12


def _big_prompt(run: cl.Run) -> cl.Run:
    settings = {**run.agent_settings, "system": "You file expenses. " * 20_000}
    return msgspec.structs.replace(run, agent_settings=settings)


def test_a_full_disk_says_the_disk_is_full_not_that_the_database_is_unreadable(
    home, tmp_path, monkeypatch
):
    from convlab._history import record_run

    run = cl.run(EXPENSE, "demo:expense", store=tmp_path / "a.jsonl", progress=False)
    cl.history()  # recorded: a healthy database
    prepare = _db._prepare

    def full(conn: sqlite3.Connection, path: Path) -> None:
        prepare(conn, path)  # then the disk has no room for one more page
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")

    monkeypatch.setattr(_db, "_prepare", full)
    bigger = msgspec.structs.replace(_big_prompt(run), id="second")
    with pytest.warns(RuntimeWarning) as caught:
        assert record_run(bigger) is None
    said = str(caught[0].message)
    assert "is full" in said and str(home / "history.db") in said
    assert "not a readable" not in said and "Move it away" not in said
    assert "is full" in bigger.settings["history"]["error"]
    monkeypatch.setattr(_db, "_prepare", prepare)
    assert list(cl.history().run_id) == [run.id]  # intact, as the message says


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_another_programs_file_is_refused_without_a_byte_changed(home):
    home.mkdir()
    db = home / "history.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    before, mtime = _digest(db), db.stat().st_mtime_ns
    with pytest.warns(RuntimeWarning, match="another program's tables: notes"):
        cl.run(EXPENSE, "demo:expense", progress=False)
    with pytest.raises(HistoryError, match="another program's tables"):
        cl.history()
    assert _digest(db) == before and db.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in home.iterdir()) == ["history.db"]  # no -wal, no -shm
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


_V1 = {
    "run_id": "TEXT NOT NULL UNIQUE",
    "recorded_at": "TEXT NOT NULL",
    "status": "TEXT NOT NULL",
    "suite": "TEXT",
    "total": "INTEGER",
    "pass_rate": "REAL",
}
"""A version-1 history file that lacks most of today's columns."""


def test_a_version_1_file_missing_columns_is_read_and_upgraded(home):
    home.mkdir()
    db = home / "history.db"
    with sqlite3.connect(db) as conn:
        columns = ", ".join(f"{k} {v}" for k, v in _V1.items())
        conn.execute(f"CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, {columns})")
        conn.execute(
            "INSERT INTO runs (run_id, recorded_at, status, suite, total, pass_rate) "
            "VALUES ('old1', '2026-01-02T03:04:05+00:00', 'completed', 'expense', 12, 75.0)"
        )
        conn.execute("PRAGMA user_version = 1")
    h = cl.history()
    assert list(h.columns) == list(FRAME_COLUMNS)
    assert list(h.run_id) == ["old1"] and h.total[0] == 12 and h.pass_rate[0] == 75.0
    assert h.started_at.isna().all() and h.agent_settings[0] == {}
    with sqlite3.connect(db) as conn:
        have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
        assert set(FIELDS) <= have  # the upgrade added what was missing
        assert conn.execute("PRAGMA user_version").fetchone()[0] == _db.SCHEMA_VERSION
    listing = _cli("history")
    assert listing.returncode == 0, listing.stderr
    assert "old1" not in listing.stdout and "expense" in listing.stdout  # the table
    assert "75.0%" in listing.stdout
    run = cl.run(EXPENSE, "demo:expense", progress=False)
    assert list(cl.history().run_id) == [run.id, "old1"]
    as_json = [json.loads(x) for x in _cli("history", "--json").stdout.splitlines()]
    assert [r["run_id"] for r in as_json] == [run.id, "old1"]
    assert all(list(r) == list(FRAME_COLUMNS) for r in as_json)  # --json: the frame's columns


def test_the_history_files_are_their_owners_only(home):
    run = cl.run(EXPENSE, "demo:expense", progress=False)
    cl.history()
    assert _mode(home) == 0o700
    assert _mode(home / "history.db") == 0o600
    assert _mode(home / "runs") == 0o700
    assert _mode(home / "runs" / f"{run.id}.jsonl.gz") == 0o600
    for extra in home.glob("history.db-*"):  # sqlite's own files take the database's mode
        assert _mode(extra) == 0o600


def test_a_history_made_readable_by_others_is_narrowed(home):
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    db = home / "history.db"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cl.run(EXPENSE, "demo:expense", progress=False)
        cl.history()
    os.chmod(db, 0o644)  # as an earlier convlab left it
    cl.run(EXPENSE, "demo:expense", progress=False)
    cl.history()
    assert _mode(db) == 0o600
    assert _mode(home) == 0o755  # a folder the user made keeps its mode


def test_history_keep_prunes_the_oldest_runs_and_their_copies(home, tmp_path):
    store = tmp_path / "kept.jsonl"
    stored = cl.run(EXPENSE, "demo:expense", store=store, progress=False, history_keep=2)
    first = cl.run(EXPENSE, "demo:expense", progress=False, history_keep=2)
    second = cl.run(EXPENSE, "demo:expense", progress=False, history_keep=2)
    assert list(cl.history().run_id) == [second.id, first.id]
    assert store.exists()  # a run's own store is the user's: never deleted
    third = cl.run(EXPENSE, "demo:expense", progress=False, history_keep=2)
    assert list(cl.history().run_id) == [third.id, second.id]
    copies = sorted(p.name for p in (home / "runs").iterdir())
    assert copies == sorted(f"{r.id}.jsonl.gz" for r in (second, third))
    assert stored.id not in set(cl.history().run_id)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="history_keep="):
            cl.run(EXPENSE, "demo:expense", progress=False, history_keep=bad)  # type: ignore[arg-type]


def test_the_default_keeps_a_few_hundred_runs(home):
    from convlab._history import HISTORY_KEEP, record_run

    assert 200 <= HISTORY_KEEP <= 1000
    run = cl.run(EXPENSE, "demo:expense", progress=False, history=False)
    for i in range(5):
        record_run(msgspec.structs.replace(run, id=f"r{i}"), keep=3)
    assert list(cl.history().run_id) == ["r4", "r3", "r2"]


def test_convlab_history_prune_keeps_the_newest(home, tmp_path):
    runs = [cl.run(EXPENSE, "demo:expense", progress=False) for _ in range(3)]
    out = _cli("history", "--prune", "--keep", "1")
    assert out.returncode == 0, out.stderr
    assert "deleted 2" in out.stdout and str(home / "history.db") in out.stdout
    assert list(cl.history().run_id) == [runs[-1].id]
    assert [p.name for p in (home / "runs").iterdir()] == [f"{runs[-1].id}.jsonl.gz"]
    bad = _cli("history", "--prune", "--keep", "-1")
    assert bad.returncode == 2 and ">= 0" in bad.stderr
    made = _cli("run", "-i", str(EXPENSE), "-n", "demo:expense", "-o", str(tmp_path / "r.json"),
                "--history-keep", "1")  # fmt: skip
    assert made.returncode == 1, made.stderr  # two cases fail on purpose
    assert len(cl.history()) == 1


def test_every_view_of_the_history_takes_its_columns_from_the_record():
    from convlab._history.row import CLI_TABLE, NOTEBOOK_TABLE

    assert list(_db.COLUMNS) == list(HistoryRow.__struct_fields__)
    assert set(FRAME_COLUMNS) - {"id", "duration_s"} <= set(FIELDS)
    assert set(NOTEBOOK_TABLE) <= set(FRAME_COLUMNS) and set(CLI_TABLE) <= set(FRAME_COLUMNS)
