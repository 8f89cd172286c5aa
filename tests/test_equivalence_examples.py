"""Every example suite still produces, field for field, the results it produced before
the refactor to lean records ( lazy `Run.results`, columnar frames, compact stores).

The golden files (tests/data/golden/<example>.json) were recorded from the engine as it was
before; only durations, timestamps and the run id (and the ids derived from it) are
normalized, after checking they are well-formed (tests/golden.py says how). A failure lists
the example, the instance, the field, and what was expected vs found.

Regenerate the golden files only for an intended behaviour change (and say so in the commit):

    python -m tests.golden --update     # rewrite tests/data/golden/*.json
    python -m tests.golden              # just compare and print the differences
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from golden import (
    EXPECTED,
    MANY_KEYS,
    RUNS,
    differences,
    example_differences,
    explain,
    golden_path,
    load_golden,
    plain,
    project,
    repeated,
    result_record,
    rooted,
    run_example,
    suite_repetitions,
)

import convlab as cl
from convlab.engine.store import read_store

FOLDERS = sorted(EXPECTED)
MANY = max(RUNS)


@cache
def projected(folder: str, runs: int) -> dict[str, Any]:
    return plain(project(run_example(folder, runs)))


def test_every_example_has_a_golden_record() -> None:
    assert FOLDERS == ["catalog", "cloud_drive", "expense", "finance"]
    for folder in FOLDERS:
        assert golden_path(folder).is_file(), f"no golden record for {folder}: see the docstring"
        golden = load_golden(folder)
        statuses = {r["case_id"]: r["status"] for r in golden["results"]}
        assert statuses == EXPECTED[folder]["cases"], f"{folder}'s golden record is stale"


@pytest.mark.parametrize("folder", FOLDERS)
def test_example_results_and_views_equal_the_golden_record(folder: str) -> None:
    diffs = example_differences(load_golden(folder), projected(folder, 1), projected(folder, MANY))
    assert not diffs, explain(diffs, f"example {folder} (runs=1 and runs={MANY})")


def _by_plan(expected: list[dict[str, Any]], found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`found` in `expected`'s order: a store holds instances as they finished."""

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["case_id"], sorted(r["variant"].items()), r["repetition"], r["run"])

    rank = {repr(key(r)): i for i, r in enumerate(expected)}
    return sorted(found, key=lambda r: rank.get(repr(key(r)), len(rank)))


def _stored_run_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A store's header is written when the run starts: it cannot know how the run ended."""
    drop = ("status", "finished_at")
    kept = {k: v for k, v in fields.items() if k not in drop}
    kept["settings"] = {k: v for k, v in fields["settings"].items() if k != "store"}
    return kept


@pytest.mark.parametrize("folder", FOLDERS)
def test_example_stored_and_reloaded_equals_the_golden_record(folder: str, tmp_path: Path) -> None:
    """The runs=3 run with a store: the store read back, `load_run` of the store, and the run
    saved as .json and .jsonl and loaded again all hold the golden results and views."""
    golden = load_golden(folder)
    store = tmp_path / "store.jsonl"
    run = run_example(folder, MANY, store=store)
    expected_results = repeated(golden["results"], MANY)
    expected_views = {k: golden[f"runs={MANY}"][k] for k in MANY_KEYS if k != "run"}
    expected_fields = _stored_run_fields(golden[f"runs={MANY}"]["run"])

    header, stored = read_store(store)
    assert header is not None
    reps = suite_repetitions(cl.Suite.model_validate(header["suite"]))
    found = _by_plan(
        expected_results, plain(rooted([result_record(r, header["id"], reps) for r in stored]))
    )
    diffs = differences(expected_results, found, "read_store.results")

    loaded = {
        "memory": run,
        "load_run(store)": cl.load_run(store),
        "load_run(.json)": cl.load_run(run.save(tmp_path / "run.json")),
        "load_run(.jsonl)": cl.load_run(run.save(tmp_path / "run.jsonl")),
    }
    for name, again in loaded.items():
        seen = plain(project(again))
        results = seen["results"]
        if name == "load_run(store)":
            results = _by_plan(expected_results, results)
        diffs += differences(expected_results, results, f"{name}.results")
        diffs += differences(expected_views, {k: seen[k] for k in expected_views}, name)
        fields = _stored_run_fields(seen["run"])
        diffs += differences(expected_fields, fields, f"{name}.run")
    assert not diffs, explain(diffs, f"example {folder} stored and reloaded (runs={MANY})")


@pytest.mark.parametrize("folder", FOLDERS)
def test_example_saved_once_and_reloaded_keeps_every_view(folder: str, tmp_path: Path) -> None:
    """A runs=1 run saved as .json and .jsonl loads back with every frame of the golden."""
    golden = load_golden(folder)
    run = run_example(folder, 1)
    diffs: list[str] = []
    for suffix in (".json", ".jsonl"):
        again = plain(project(cl.load_run(run.save(tmp_path / f"run{suffix}"))))
        diffs += [f"{suffix}: {d}" for d in example_differences(golden, again)]
    assert not diffs, explain(diffs, f"example {folder} saved and reloaded (runs=1)")
