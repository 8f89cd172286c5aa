"""The example suites: each folder loads in its format and, run on its demo agent, ends
with exactly the statuses examples/expected.yaml lists (failing cases included)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

import convlab as cl
from convlab.agents.protocol import as_agent

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())
FOLDERS = sorted(EXPECTED)


def fresh_run(folder: str) -> cl.Run:
    spec = EXPECTED[folder]
    suite = cl.load(EXAMPLES / spec["path"])
    return cl.run(suite, as_agent(spec["agent"]), simulator=spec["simulator"], progress=False)


@cache
def run_folder(folder: str) -> cl.Run:
    """One run per folder, shared by the tests that only read it."""
    return fresh_run(folder)


def test_expected_yaml_covers_every_example_folder() -> None:
    folders = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert folders == FOLDERS == ["catalog", "cloud_drive", "expense", "finance"]
    for spec in EXPECTED.values():
        assert spec["agent"].removeprefix("demo:") in cl.agents.demos.names()
        assert set(spec["cases"].values()) <= {"passed", "failed", "error"}


@pytest.mark.parametrize("folder", FOLDERS)
def test_example_loads_in_its_format(folder: str) -> None:
    spec = EXPECTED[folder]
    suite = cl.load(EXAMPLES / spec["path"])
    assert {s.format for s in suite.sources} == {spec["format"]}
    assert list(suite.df["case_id"]) == list(spec["cases"])


@pytest.mark.parametrize("folder", FOLDERS)
def test_example_runs_on_its_demo_agent_with_the_expected_statuses(folder: str) -> None:
    run = run_folder(folder)
    got: dict[str, set[str]] = {}
    for case_id, status in zip(run.df["case_id"], run.df["status"], strict=True):
        got.setdefault(case_id, set()).add(status)
    assert got == {case: {status} for case, status in EXPECTED[folder]["cases"].items()}


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_case_meant_to_fail_is_explained_in_the_readme(folder: str) -> None:
    readme = (EXAMPLES / folder / "README.md").read_text()
    for case, status in EXPECTED[folder]["cases"].items():
        if status != "passed":
            name = case.split(":")[-1]
            assert f"`{name}`" in readme.split("## Expected")[1], f"{case} is not explained"


def test_failing_examples_fail_for_the_reason_their_readme_gives() -> None:
    errors = {
        (folder, case): err
        for folder in FOLDERS
        for case, err in zip(*(run_folder(folder).df[c] for c in ("case_id", "error")), strict=True)
    }
    assert "manager approval" in errors["expense", "expense-policy-limit"]
    assert "missing: ask_receipt" in errors["expense", "expense-dynamic-receipt"]
    assert "EVALUATION_SELECTION_AMBIGUOUS" in errors["catalog", "ambiguous-label"]
    assert '"productId": "lamp-01"' in errors["catalog", "cheapest-first"]
    assert '"0.14136"' in errors["finance", "percentage-as-text"]
    assert "nobody answered" in errors["cloud_drive", "cloud_drive.py:test_delete_without_user"]


def test_dynamic_example_reaches_its_checkpoints_turn_by_turn() -> None:
    run = run_folder("expense")
    [case] = [r for r in run.results if r.case_id == "expense-dynamic"]
    reached = {c.id: c.reached_at_turn for c in case.checkpoints}
    assert reached == {"ask_type": 1, "call_create": 2, "confirm": 3, "mentions_policy": None}
    assert [t.messages[0].content for t in case.turns] == [
        "Help me file an expense",
        "Client dinner, $250",
        "Yes, please go ahead.",
    ]


def test_example_runs_are_the_same_every_time() -> None:
    def transcript(run: cl.Run) -> list[Any]:
        frame = run.turns_df
        return frame[
            ["case_id", "variant", "turn", "input", "response", "tools", "status"]
        ].to_dict("records")

    for folder in FOLDERS:
        assert transcript(fresh_run(folder)) == transcript(run_folder(folder))
