"""The run history: every run recorded in a local SQLite database (CONVLAB_HOME/history.db),
listed by `cl.history()` and `convlab history`, brought back by `cl.load_run(history_id)`;
secrets never written; two writers at once lose nothing; a damaged or newer database never
stops a run."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.errors import HistoryError
from convlab.model import Case, Message, Suite
from convlab.plan import write_suite

ROOT = Path(__file__).resolve().parent.parent
EXPENSE = ROOT / "examples" / "expense"
FINANCE = ROOT / "examples" / "finance"


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "convlab.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=180,
    )


def _texts(run: cl.Run) -> list[Any]:
    return [
        (r.case_id, r.status, [t.observation.text if t.observation else None for t in r.turns])
        for r in run.results
    ]


def test_the_tests_never_write_to_the_real_home():
    home = Path(os.environ["CONVLAB_HOME"])
    assert home != Path.home() / ".convlab"
    assert not str(home).startswith(str(Path.home() / ".convlab"))


def test_a_run_is_recorded_with_its_suite_agent_figures_and_results(home):
    run = cl.run(EXPENSE, "demo:expense", runs=2, parallel=3, progress=False)
    h = cl.history()
    assert len(h) == 1
    row = h.iloc[0]
    assert row["run_id"] == run.id and row["status"] == "completed"
    assert row["suite"] == "expense"
    assert row["suite_path"] == str(EXPENSE / "expense.jsonl")
    assert row["fingerprint"] == write_suite(run.suite, None)
    assert row["agent"] == "demo:expense"
    assert row["agent_settings"] == run.agent_settings == {"spec": "demo:expense"}
    figures = {k: row[k] for k in ("total", "passed", "failed", "errors", "runs", "parallel")}
    assert figures == {
        "total": 24,
        "passed": 20,
        "failed": 4,
        "errors": 0,
        "runs": 2,
        "parallel": 3,
    }
    assert row["pass_rate"] == pytest.approx(run.summary["pass_rate"])
    assert row["cost_usd"] == run.summary["cost_usd"] == 0  # a demo agent costs nothing
    assert row["started_at"].isoformat(timespec="milliseconds") == run.started_at
    # a run with no store is kept, compressed, beside the database
    kept = Path(row["results_path"])
    assert kept.parent == home / "runs" and kept.name == f"{run.id}.jsonl.gz"
    back = cl.load_run(int(row["id"]))
    assert back.id == run.id and back.status == "completed"
    assert _texts(back) == _texts(run)
    assert back.summary == run.summary
    assert back.agent_settings == run.agent_settings


def test_newest_first_filtered_by_suite_name_or_path_with_a_limit(home):
    first = cl.run(EXPENSE, "demo:expense", progress=False)
    second = cl.run(FINANCE, "demo:finance", progress=False)
    third = cl.run(EXPENSE, "demo:expense", progress=False)
    assert list(cl.history().run_id) == [third.id, second.id, first.id]
    assert list(cl.history(limit=2).run_id) == [third.id, second.id]
    by_name = cl.history(suite="expense")
    assert list(by_name.run_id) == [third.id, first.id]
    assert list(cl.history(suite=str(EXPENSE)).run_id) == [third.id, first.id]  # the folder
    assert list(cl.history(suite=EXPENSE / "expense.jsonl").run_id) == [third.id, first.id]
    assert list(cl.history(suite=cl.load(FINANCE)).run_id) == [second.id]
    assert cl.history(suite="no-such-suite").empty
    with pytest.raises(ValueError, match="limit=0"):
        cl.history(limit=0)


def test_history_false_and_no_history_record_nothing(home, tmp_path):
    cl.run(EXPENSE, "demo:expense", progress=False, history=False)
    assert cl.history().empty
    with pytest.raises(ValueError, match="history='no'"):
        cl.run(EXPENSE, "demo:expense", progress=False, history="no")  # type: ignore[arg-type]
    out = _cli("run", "-i", str(EXPENSE), "-n", "demo:expense", "-o", str(tmp_path / "a.json"),
               "--no-history")  # fmt: skip
    assert out.returncode == 1, out.stderr  # two cases fail on purpose
    assert cl.history().empty
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "expense.jsonl").write_text((EXPENSE / "expense.jsonl").read_text())
    (suite / "convlab.yaml").write_text("agent: demo:expense\nhistory: false\n")
    out = _cli("run", "-i", str(suite), "-o", str(tmp_path / "b.json"))
    assert out.returncode == 1, out.stderr
    assert cl.history().empty
    out = _cli("run", "-i", str(EXPENSE), "-n", "demo:expense", "-o", str(tmp_path / "c.json"))
    assert out.returncode == 1, out.stderr
    assert len(cl.history()) == 1  # the CLI records by default


def test_a_stored_run_is_read_from_its_store(home, tmp_path):
    store = tmp_path / "run.jsonl"
    run = cl.run(EXPENSE, "demo:expense", store=store, progress=False)
    row = cl.history().iloc[0]
    assert row["results_path"] == str(store)
    assert not (home / "runs").exists() or not list((home / "runs").iterdir())  # no second copy
    assert _texts(cl.load_run(int(row["id"]))) == _texts(run)
    cl.run(EXPENSE, "demo:expense", store=store, overwrite=True, progress=False)
    with pytest.warns(RuntimeWarning, match="was written again after it"):
        cl.load_run(int(row["id"]))


def test_a_save_is_noted_and_read_when_the_kept_copy_is_gone(home, tmp_path):
    run = cl.run(EXPENSE, "demo:expense", progress=False)
    saved = run.save(tmp_path / "kept.jsonl")
    row = cl.history().iloc[0]
    assert row["saved_path"] == str(saved)
    Path(row["results_path"]).unlink()
    assert _texts(cl.load_run(int(row["id"]))) == _texts(run)
    saved.unlink()
    with pytest.raises(HistoryError, match="no longer exists"):
        cl.load_run(int(row["id"]))
    with pytest.raises(HistoryError, match="no run with history id 999"):
        cl.load_run(999)


def test_stopped_and_awaited_runs_are_recorded(home):
    import asyncio

    def slow(messages):
        time.sleep(0.2)
        return "ok"

    handle = cl.start(EXPENSE, slow, parallel=1, progress=False)
    while not handle.results:
        time.sleep(0.02)
    stopped = handle.stop()
    awaited = asyncio.run(cl.arun(FINANCE, "demo:finance", progress=False))
    h = cl.history()
    assert list(h.run_id) == [awaited.id, stopped.id]
    assert list(h.status) == ["completed", "cancelled"]
    kept = cl.load_run(int(h.id[1]))
    assert kept.status == "cancelled"
    assert [r.status for r in kept.results] == [r.status for r in stopped.results]


def test_record_run_names_an_experiment_and_a_variant_and_records_a_run_once(home):
    from convlab._history import record_run

    run = cl.run(EXPENSE, "demo:expense", progress=False, history=False)
    hid = record_run(run, experiment="prompts", variant="short")
    assert isinstance(hid, int)
    assert record_run(run) == hid  # again: the same entry, its names kept
    h = cl.history(experiment="prompts")
    assert list(h.id) == [hid] and h.variant[0] == "short"
    assert len(cl.history()) == 1


def test_the_cost_and_the_agent_settings_are_kept_and_secrets_never_are(home, monkeypatch):
    from convlab.agents.serve import DemoServer

    key = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-9876543210zyxwvuSECRET")
    system = "You file expenses. Be brief."
    # the demo expense agent served as a model genai-prices knows: its usage is priced
    with DemoServer({"gpt-4o-mini": "demo:expense"}) as base:
        agent = cl.agents.openai("gpt-4o-mini", base_url=base, api_key=key, system=system)
        plain = cl.agents.openai("gpt-4o-mini", base_url=base, system=system, temperature=0.2)
        keyed = cl.run(EXPENSE, agent, progress=False)
        cl.run(EXPENSE, plain, progress=False)
    h = cl.history()
    settings = h.agent_settings[0]
    assert settings["system"] == system and settings["model"] == "gpt-4o-mini"
    assert settings["params"]["temperature"] == 0.2
    assert h.model[0] == "gpt-4o-mini"
    assert h.cost_usd[1] == pytest.approx(keyed.summary["cost_usd"]) and h.cost_usd[1] > 0
    written = b"".join(p.read_bytes() for p in home.iterdir() if p.is_file())
    written += b"".join(gzip.decompress(p.read_bytes()) for p in (home / "runs").iterdir())
    assert system.encode() in written
    assert b"SECRET" not in written


def _writer_script(home: Path, go: Path, n: int) -> str:
    return textwrap.dedent(
        f"""
        import os, sys, time, warnings
        import msgspec
        warnings.simplefilter("error")
        os.environ["CONVLAB_HOME"] = {str(home)!r}
        import convlab as cl
        from convlab._history import record_run
        run = cl.run({str(EXPENSE)!r}, "demo:expense", progress=False, history=False)
        print("ready", flush=True)
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        ids = [record_run(msgspec.structs.replace(run, id=f"{{os.getpid()}}-{{i}}"))
               for i in range({n})]
        assert all(isinstance(i, int) for i in ids), ids
        print("done", len(ids), flush=True)
        """
    )


def test_two_processes_writing_at_once_lose_no_row(home, tmp_path):
    n = 40
    go = tmp_path / "go"
    script = _writer_script(home, go, n)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for _ in range(2)
    ]
    for p in procs:  # both loaded and ready: then both write at once
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == f"done {n}", out + err
    h = cl.history(limit=None)
    assert len(h) == 2 * n
    assert h.run_id.nunique() == 2 * n and h.id.nunique() == 2 * n
    pids = {rid.split("-")[0] for rid in h.run_id}
    assert len(pids) == 2
    # the writes did interleave: neither process wrote all its rows before the other began
    order = [rid.split("-")[0] for rid in h.sort_values("id").run_id]
    assert order[:n] != [order[0]] * n
    assert len(cl.load_run(int(h.id.iloc[-1])).results) == 12


def _damaged(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    db = home / "history.db"
    db.write_bytes(os.urandom(3000) + b"not a database" * 100)
    return db


def test_a_damaged_database_never_stops_a_run(home, tmp_path):
    db = _damaged(home)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = cl.run(EXPENSE, "demo:expense", progress=False)
    assert run.status == "completed" and len(run.results) == 12
    assert run.summary["passed"] == 10
    said = [str(w.message) for w in caught if "history entry was not written" in str(w.message)]
    assert len(said) == 1 and str(db) in said[0]
    assert run.settings["history"]["written"] is False
    assert str(db) in run.settings["history"]["error"]
    assert not (home / "runs").exists() or not list((home / "runs").iterdir())
    with pytest.raises(HistoryError) as info:
        cl.history()
    message = str(info.value)
    assert str(db) in message and "Move it away" in message and "CONVLAB_HOME" in message
    with pytest.raises(HistoryError, match="not a readable convlab history database"):
        cl.load_run(1)
    # the command line: the run completes and writes its results; the listing says what to do
    out = _cli("run", "-i", str(EXPENSE), "-n", "demo:expense", "-o", str(tmp_path / "r.json"))
    assert out.returncode == 1, out.stderr  # two cases fail on purpose: the run's own verdict
    assert (tmp_path / "r.json").exists()
    assert "history entry was not written" in out.stderr and str(db) in out.stderr
    listing = _cli("history")
    assert listing.returncode == 2
    assert str(db) in listing.stderr and "Move it away" in listing.stderr
    assert "Traceback" not in listing.stderr
    # moved away, as the message says: a new database starts
    db.rename(home / "history.db.bad")
    cl.run(EXPENSE, "demo:expense", progress=False)
    assert len(cl.history()) == 1


def test_a_newer_database_is_refused_and_the_run_goes_on(home):
    home.mkdir()
    db = home / "history.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.warns(RuntimeWarning, match="newer convlab"):
        run = cl.run(EXPENSE, "demo:expense", progress=False)
    assert run.status == "completed" and len(run.results) == 12
    from convlab._history import SCHEMA_VERSION

    reads = rf"schema version 99; this convlab reads up to {SCHEMA_VERSION}\)"
    with pytest.raises(HistoryError, match=reads):
        cl.history()


def test_another_programs_database_is_left_alone(home):
    home.mkdir()
    db = home / "history.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    with pytest.warns(RuntimeWarning, match="another program's tables: notes"):
        cl.run(EXPENSE, "demo:expense", progress=False)
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["notes"]


def _suite(name: str, reply_ok: bool = True) -> Suite:
    case = Case(
        id="c1", input=[Message(content="hi")], assertions=[{"kind": "contains", "value": "ok"}]
    )
    return Suite(id=name, name=name, cases=[case])


def test_the_table_and_the_chart_escape_what_users_wrote(home):
    evil = "<script>alert(1)</script>"
    cl.run(_suite(evil), lambda m: "ok", progress=False)
    cl.run(_suite(evil), lambda m: "no", progress=False)
    cl.run(_suite("plain"), lambda m: "ok", progress=False)
    h = cl.history()
    html = h.table().to_html()
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    bundle = h._repr_mimebundle_()
    assert evil not in bundle["text/html"] and "History" in bundle["text/plain"]
    fig = h.plot(by="suite")
    names = ["&lt;script&gt;alert(1)&lt;/script&gt;", "plain"]
    assert [(t.name, t.yaxis, list(t.y)) for t in fig.data] == [
        (names[0], "y", [100.0, 0.0]),  # oldest first
        (names[0], "y2", [0.0, 0.0]),  # a function agent costs nothing
        (names[1], "y", [100.0]),
        (names[1], "y2", [0.0]),
    ]
    assert all(evil not in str(t.hovertext) for t in fig.data)
    assert all(evil not in t.name for t in h.plot().data)  # one line per agent and suite
    # a cost that is not known is no point, and with none the cost panel says so
    h.loc[h.suite == "plain", "cost_usd"] = 0.0125
    fig = h.plot(suite="plain")
    assert [(t.yaxis, list(t.y)) for t in fig.data] == [("y", [100.0]), ("y2", [0.0125])]
    h["cost_usd"] = float("nan")
    fig = h.plot()
    assert [t.yaxis for t in fig.data] == ["y", "y"]
    assert "no run has a known cost" in fig.layout.title.text
    with pytest.raises(ValueError, match="no run of suite 'nope'"):
        h.plot(suite="nope")


def test_the_chart_draws_a_line_per_agent_or_variant_not_one_zig_zag_per_suite(home):
    """Two agents take turns on one suite, one always right and one always wrong: a line per
    suite would zig-zag between 100% and 0%; a line per agent is flat, as each agent is."""
    suite = _suite("turns")
    good, bad = (
        cl.agents.function(lambda m: "ok", name="good"),
        cl.agents.function(lambda m: "no", name="bad"),
    )
    for agent in (good, bad, good, bad):
        cl.run(suite, agent, progress=False)
    cl.run(suite, {"short": good, "long": bad}, experiment="try", progress=False)
    h = cl.history()
    per_agent = [(t.name, list(t.y)) for t in h.plot().data if t.yaxis == "y"]
    assert per_agent == [("good", [100.0, 100.0, 100.0]), ("bad", [0.0, 0.0, 0.0])]
    assert "one line per agent" in h.plot().layout.title.text
    per_variant = [(t.name, list(t.y)) for t in h.plot(by="variant").data if t.yaxis == "y"]
    assert per_variant == [
        ("good", [100.0, 100.0]),
        ("bad", [0.0, 0.0]),
        ("short", [100.0]),
        ("long", [0.0]),
    ]
    (per_suite,) = [list(t.y) for t in h.plot(by="suite").data if t.yaxis == "y"]
    assert per_suite[:4] == [100.0, 0.0, 100.0, 0.0]  # the zig-zag a line per suite draws
    assert sorted(per_suite[4:]) == [0.0, 100.0]  # the experiment's two variants
    with pytest.raises(ValueError, match="by='model': use one of 'agent', 'variant', 'suite'"):
        h.plot(by="model")


def test_convlab_history_lists_runs_on_the_command_line(home, tmp_path):
    first = cl.run(EXPENSE, "demo:expense", progress=False)
    second = cl.run(FINANCE, "demo:finance", progress=False)
    out = _cli("history")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == [
        "id",
        "when",
        "suite",
        "agent",
        "status",
        "total",
        "pass",
        "rate",
        "cost",
    ]
    assert lines[1].split()[0] == "2" and "finance-demo" in lines[1] and "83.3%" in lines[1]
    assert lines[2].split()[0] == "1" and "demo:expense" in lines[2]
    assert lines[2].endswith("$0.00")  # convlab._readable.cost
    only = _cli("history", "--suite", str(EXPENSE), "--limit", "5")
    assert [line.split()[0] for line in only.stdout.splitlines()[1:]] == ["1"]
    as_json = _cli("history", "--json", "--limit", "1")
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [r["run_id"] for r in records] == [second.id]
    assert records[0]["agent_settings"] == {"spec": "demo:finance"}
    assert records[0]["cost_usd"] == 0
    assert first.id in _cli("history", "--json").stdout
    empty = _cli("history", "--suite", "nothing")
    assert empty.returncode == 0 and "no recorded runs of 'nothing'" in empty.stderr


def test_an_unknown_cost_is_a_dash_never_zero(home):
    from convlab._cli_history import history_lines

    cl.run(EXPENSE, "demo:expense", progress=False)
    h = cl.history()
    h["cost_usd"] = float("nan")
    assert history_lines(h)[1].split()[-2:] == ["83.3%", "-"]


def test_an_experiment_records_each_variant_under_its_name(home):
    exp = cl.run(
        EXPENSE,
        {"full": "demo:expense", "lite": "demo:expense_lite"},
        experiment="prompts",
        progress=False,
    )
    h = cl.history(experiment="prompts")
    assert sorted(zip(h.variant, h.run_id, strict=True)) == [
        ("full", exp.runs["full"].id),
        ("lite", exp.runs["lite"].id),
    ]
    for hid, variant in zip(h.id, h.variant, strict=True):
        assert _texts(cl.load_run(int(hid))) == _texts(exp.runs[variant])
    cl.run(EXPENSE, {"a": "demo:expense", "b": "demo:expense"}, progress=False, history=False)
    assert len(cl.history()) == 2
