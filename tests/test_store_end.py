"""A results store says how its run ended: `load_run` of a finished run's store is that run,
status and all, not a run forever `running`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convlab as cl
from convlab.engine.store import read_store
from convlab.errors import SuiteError
from convlab.model import Case, Message, Suite


def _suite(n: int = 4) -> Suite:
    cases = [
        Case(
            id=f"c{i}",
            input=[Message(content=f"hi {i}")],
            assertions=[{"kind": "contains", "value": "hi"}],
        )
        for i in range(n)
    ]
    checks = [{"kind": "check", "path": ["summary", "passed"], "operator": "equals", "value": n}]
    return Suite.model_validate({"id": "s", "cases": cases, "assertions": checks})


def test_a_finished_runs_store_loads_as_that_run(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    run = cl.run(_suite(), lambda m: m[-1]["content"], store=store, progress=False)
    assert run.status == "completed" and run.suite_assertions[0].status == "passed"
    back = cl.load_run(store)
    assert (back.status, back.finished_at, back.error) == ("completed", run.finished_at, None)
    assert back.suite_assertions == run.suite_assertions
    by_id = sorted(back.results, key=lambda r: r.case_id)  # a store keeps them as they ended
    assert by_id == sorted(run.results, key=lambda r: r.case_id) and "running" not in repr(back)
    header, results = read_store(store)
    assert header is not None and header["status"] == "completed" and len(results) == 4


def test_a_failed_run_says_why_and_a_crashed_one_is_still_running(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"

    def before(suite: Suite) -> None:
        raise RuntimeError("no database")

    run = cl.run(_suite(), lambda m: "x", store=store, before=before, progress=False)
    back = cl.load_run(store)
    assert back.status == run.status == "failed" and "no database" in (back.error or "")
    # a store whose run never ended (the process died) has no end line
    lines = store.read_text(encoding="utf-8").splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "summary"
    store.write_text("".join(lines[:-1]), encoding="utf-8")
    assert cl.load_run(store).status == "running"


def test_a_resumed_store_ends_as_its_last_run(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"

    def wrong_on_c1(messages: list[dict[str, str]]) -> str:
        return "nope" if messages[-1]["content"] == "hi 1" else messages[-1]["content"]

    first = cl.run(_suite(), wrong_on_c1, store=store, fail_fast=True, parallel=1, progress=False)
    assert [r.status for r in first.results] == ["passed", "failed", "cancelled", "cancelled"]
    assert cl.load_run(store).finished_at == first.finished_at
    again = cl.run(_suite(), lambda m: m[-1]["content"], store=store, resume=True, progress=False)
    assert sorted(r.status for r in again.results) == ["failed", "passed", "passed", "passed"]
    back = cl.load_run(store)
    assert (back.status, back.finished_at) == (again.status, again.finished_at)
    assert back.suite_assertions == again.suite_assertions != []
    assert len(back.results) == 4
    kinds = [json.loads(x)["type"] for x in store.read_text(encoding="utf-8").splitlines()]
    assert kinds.count("summary") == 2 and kinds[-1] == "summary"


def test_a_broken_end_line_is_named(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    cl.run(_suite(), lambda m: m[-1]["content"], store=store, progress=False)
    text = store.read_text(encoding="utf-8").replace('"status":"completed"', '"status":"done"')
    store.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as err:
        cl.load_run(store)
    n = len(text.splitlines())
    assert f":{n}" in str(err.value) and "status" in str(err.value)
