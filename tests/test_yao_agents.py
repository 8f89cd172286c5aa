"""Yao agent ids (`"use": "agents:validator"`) mapped to convlab agents: run(judges=...),
`convlab run --judges ID=SPEC` and `judges:` in convlab.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import convlab as cl
from tests.test_cli import many

CASE = {
    "id": "polite-greeting",
    "input": "Hello",
    "assert": [
        {"type": "contains", "value": "Hello"},
        {"type": "agent", "use": "agents:validator", "value": "The reply is polite"},
    ],
}
MODULE = """
def agent(messages):
    return "Hello there."

def lenient(messages):
    return '{"passed": true, "reason": "polite enough"}'

def strict(messages):
    return '```json\\n{"passed": false, "reason": "too curt"}\\n```'
"""


def _suite(folder: Path, config: str = "") -> Path:
    folder.mkdir()
    (folder / "polite.jsonl").write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    if config:
        (folder / "convlab.yaml").write_text(config, encoding="utf-8")
    return folder


def test_run_maps_a_yao_agent_id_to_a_convlab_agent(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    asked: list[str] = []

    def validator(messages: list[dict[str, Any]]) -> str:
        asked.append(messages[-1]["content"])
        return '{"passed": false, "reason": "too curt"}'

    def judge(messages: list[dict[str, Any]]) -> str:
        raise AssertionError("the run's judge is not the mapped validator")

    run = cl.run(
        suite,
        lambda messages: "Hello there.",
        judge=judge,
        judges={"agents:validator": validator},
        progress=False,
    )
    (result,) = run.results
    assert result.status == "failed"
    checks = {a.kind: a for a in result.turns[0].assertions}
    assert checks["agent"].message == "too curt" and checks["contains"].passed
    assert len(asked) == 1 and '"criteria": "The reply is polite"' in asked[0]
    # without a mapping a Yao id falls back to the run's judge, which says so
    fallback = cl.run(suite, lambda m: "Hello there.", judge=lambda m: '{"passed": true}',
                      progress=False)  # fmt: skip
    (agent_check,) = [a for a in fallback.results[0].turns[0].assertions if a.kind == "agent"]
    assert agent_check.passed and agent_check.details["validator"] == "the run's judge"


def test_cli_and_convlab_yaml_map_agent_ids(tmp_path: Path) -> None:
    (tmp_path / "validators.py").write_text(MODULE, encoding="utf-8")
    flag = _suite(tmp_path / "flag", "agent: validators:agent\n")
    config = "agent: validators:agent\njudges:\n  agents:validator: validators:strict\n"
    yaml = _suite(tmp_path / "yaml", config)
    out = tmp_path / "yaml.json"
    by_flag, by_yaml, flag_wins, bad, bad_yaml = many(
        ("run", "-i", str(flag), "--judges", "agents:validator=validators:lenient",
         "-o", str(tmp_path / "flag.json")),
        ("run", "-i", str(yaml), "-o", str(out)),
        ("run", "-i", str(yaml), "--judges", "agents:validator=validators:lenient",
         "-o", str(tmp_path / "wins.json")),
        ("run", "-i", str(flag), "--judges", "agents:validator"),
        ("run", "-i", str(_suite(tmp_path / "bad", "judges: [validators:strict]\n"))),
        cwd=tmp_path,
        PYTHONPATH=str(tmp_path),
    )  # fmt: skip
    assert by_flag.code == 0, by_flag.err
    assert by_yaml.code == 1 and "too curt" in out.read_text(encoding="utf-8")
    assert flag_wins.code == 0, flag_wins.err
    assert bad.code == 2 and "expected ID=SPEC" in bad.err
    assert bad_yaml.code == 2 and "judges: expected a mapping" in bad_yaml.err
