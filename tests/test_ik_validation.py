"""Validation verdicts side by side with intention-kernel's `parseEvaluationSuite`.

Each row mutates a minimal valid suite. The verdict column is what the kernel's own
schema.ts `parseEvaluationSuite` (@923d4314, zod 4.6.7, run under Node 20 with tsx) said:
"valid", or the EvaluationError code with its first issue path. convlab must load exactly
the suites the kernel accepts, and reject the others with a problem at that path. The rows
of tests/test_format_suite_json.py (RULES, INPUT_RULES) were run the same way: the kernel
rejects every RULES file and accepts every INPUT_RULES file (132 of 132 verdicts agree).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS

import convlab as cl

Doc = dict[str, Any]


def base() -> Doc:
    step = {"id": "st", "input": {"text": "hi"}}
    scenario = {"id": "sc", "name": "Sc", "writePolicy": "read_only", "steps": [step]}
    return {"schemaVersion": 1, "id": "s", "name": "S", "scenarios": [scenario]}


def top(key: str, value: Any) -> Callable[[Doc], None]:
    return lambda d: d.__setitem__(key, value)


def scen(key: str, value: Any) -> Callable[[Doc], None]:
    return lambda d: d["scenarios"][0].__setitem__(key, value)


def step(key: str, value: Any) -> Callable[[Doc], None]:
    return lambda d: d["scenarios"][0]["steps"][0].__setitem__(key, value)


def check(**kw: Any) -> Callable[[Doc], None]:
    spec = {"id": "a", "kind": "check", "path": ["a"], "operator": "exists", **kw}
    return step("assertions", [spec])


def asserting(*specs: Doc) -> Callable[[Doc], None]:
    return step("assertions", list(specs))


EXISTS = {"id": "b", "kind": "check", "path": [], "operator": "exists"}
V = "valid"
BAD = "EVALUATION_SUITE_INVALID"
A0 = "scenarios.0.steps.0.assertions.0"
ROWS: list[tuple[str, Callable[[Doc], None], str]] = [
    ("base", lambda d: None, V),
    ("emoji name 500", top("name", "😀" * 500), V),  # zod 4 counts code points
    ("emoji name 501", top("name", "😀" * 501), f"{BAD} name"),
    ("name spaces", top("name", "   "), f"{BAD} name"),
    ("name nbsp", top("name", "\u00a0"), f"{BAD} name"),  # JS trim() strips it
    ("name zwsp", top("name", "\u200b"), V),  # ... not U+200B
    ("name bom", top("name", "\ufeff"), f"{BAD} name"),
    ("name u2028", top("name", "\u2028"), f"{BAD} name"),
    ("name u3000", top("name", "\u3000"), f"{BAD} name"),
    ("name u180e", top("name", "\u180e"), V),
    ("name u0085", top("name", "\u0085"), V),
    ("id unicode", top("id", "é"), f"{BAD} id"),
    ("id 160", top("id", "a" * 160), V),
    ("id 161", top("id", "a" * 161), f"{BAD} id"),
    ("id newline end", top("id", "a\n"), f"{BAD} id"),
    ("id colon start", top("id", ":a"), f"{BAD} id"),
    ("version 1.0", top("schemaVersion", 1.0), V),
    ("version true", top("schemaVersion", True), f"{BAD} schemaVersion"),
    ("version missing", lambda d: d.pop("schemaVersion"), f"{BAD} schemaVersion"),
    ("metadata array", top("metadata", []), f"{BAD} metadata"),
    ("metadata nested", top("metadata", {"a": {"b": [1, None]}}), V),
    ("tag empty", scen("tags", [""]), f"{BAD} scenarios.0.tags.0"),
    ("tag emoji 160", scen("tags", ["😀" * 160]), V),
    ("description 5001", scen("description", "d" * 5001), f"{BAD} scenarios.0.description"),
    ("description empty", scen("description", ""), V),
    ("skipReason spaces", scen("skipReason", "  "), f"{BAD} scenarios.0.skipReason"),
    ("no steps", scen("steps", []), f"{BAD} scenarios.0.steps"),
    ("input any object", step("input", {"foo": [1, {"b": None}]}), V),
    ("input null", step("input", None), f"{BAD} scenarios.0.steps.0.input"),
    ("no variants", step("variants", []), f"{BAD} scenarios.0.steps.0.variants"),
    ("path 1.0", check(path=[1.0]), V),
    ("path -1", check(path=[-1]), f"{BAD} {A0}.path.0"),
    ("path __proto__", check(path=["__proto__"]), f"{BAD} {A0}.path.0"),
    ("path 41", check(path=["a"] * 41), f"{BAD} {A0}"),
    ("segment emoji 240", check(path=["😀" * 240]), V),
    ("segment 241", check(path=["a" * 241]), f"{BAD} {A0}.path.0"),
    ("length 1.5", check(operator="length", value=1.5), f"{BAD} {A0}.value"),
    ("length -1", check(operator="length", value=-1), f"{BAD} {A0}.value"),
    ("length 2**53", check(operator="length", value=2**53), f"{BAD} {A0}.value"),
    ("gte text", check(operator="gte", value="1"), f"{BAD} {A0}.value"),
    ("equals null", check(operator="equals", value=None), V),
    ("exists with value", check(value=3), V),
    ("label 501", check(label="l" * 501), f"{BAD} {A0}.label"),
    (
        "custom no parameters",
        asserting({"id": "a", "kind": "custom", "evaluator": "e"}),
        f"{BAD} {A0}",
    ),
    (
        "custom parameters array",
        asserting({"id": "a", "kind": "custom", "evaluator": "e", "parameters": []}),
        f"{BAD} {A0}",
    ),
    (
        "all empty",
        asserting({"id": "a", "kind": "all", "assertions": []}),
        f"{BAD} {A0}.assertions",
    ),
    ("not plural", asserting({"id": "a", "kind": "not", "assertions": [EXISTS]}), f"{BAD} {A0}"),
    ("same id as parent", asserting({"id": "b", "kind": "all", "assertions": [EXISTS]}), V),
    (
        "same step id in two scenarios",
        lambda d: d["scenarios"].append({**copy.deepcopy(d["scenarios"][0]), "id": "other"}),
        V,
    ),
    (
        "201 assertions",
        asserting(*({**EXISTS, "id": f"a{i}"} for i in range(201))),
        f"{BAD} scenarios.0.steps.0.assertions",
    ),
    ("unknown kind", asserting({**EXISTS, "kind": "llm"}), f"{BAD} {A0}"),
    (
        "depth 61",
        step("input", {"text": "", "d": json.loads("[" * 58 + "]" * 58)}),
        "EVALUATION_DATA_LIMIT",
    ),
    ("depth 53", step("input", {"text": "", "d": json.loads("[" * 50 + "]" * 50)}), V),
    ("matches object", check(operator="matches", value={"x": [1, {"y": None}]}), V),
]


def _dotted(path: str) -> str:
    """convlab's path spelling of a kernel issue path (`a.0.b` -> `a[0].b`)."""
    out = ""
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


@pytest.mark.parametrize(("mutate", "verdict"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_verdict_matches_parse_evaluation_suite(
    tmp_path: Path, mutate: Callable[[Doc], None], verdict: str
) -> None:
    doc = base()
    mutate(doc)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    if verdict == V:
        cl.load(path)
        return
    with pytest.raises(cl.SuiteError) as info:
        cl.load(path)
    code, _, where = verdict.partition(" ")
    problems = info.value.problems
    if where:  # the kernel's first issue path is where convlab reports a problem
        assert any(p.path.startswith(_dotted(where)) for p in problems), problems
    if code == "EVALUATION_DATA_LIMIT":
        assert any(code in p.message for p in problems)


def test_the_corpus_suite_is_valid_in_both() -> None:
    # the kernel's examples/evaluation.suite.json parses (its verdict was "valid")
    suite = cl.load(CORPUS / "intention-kernel")
    assert len(suite.cases) == 2


def test_validate_notes_inputs_refused_when_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the kernel accepts the file (verdict "valid" for "input any object"), so validate
    # exits 0; the input the direct adapter will refuse is a note naming scenario and step
    from convlab.cli import main

    doc = base()
    doc["scenarios"][0]["steps"][0]["input"] = {"text": "hi", "locale": "en"}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"note: {path}:" in err
    assert "scenario 'sc' step 'st': refused by a strict_input agent" in err
    assert "EVALUATION_AGENT_INPUT_INVALID): input.locale: unknown field 'locale'" in err


def test_codes_in_another_format(tmp_path: Path) -> None:
    # a Yao JSONL file gets the kernel's codes as the nearest equivalent (docs/intention-
    # kernel.md): an agent that raises is EVALUATION_TRANSPORT_FAILED (runner.ts), an
    # assertion that cannot decide is EVALUATOR_FAILED (assertions.ts), a failure has none
    def agent(messages: list[dict[str, Any]]) -> str:
        if "boom" in messages[-1]["content"]:
            raise ConnectionError("refused")
        return "hello"

    lines = [
        {"id": "ok", "input": "hi", "expected": "hello"},
        {"id": "fail", "input": "hi", "expected": "bye"},
        {"id": "boom", "input": "boom", "expected": "x"},
        {
            "id": "judge",
            "input": "hi",
            "assert": [{"type": "agent", "use": "agents:x", "value": "y"}],
        },
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    run = cl.run(path, agent, progress=False)
    assert run.df["code"].tolist() == ["", "", "EVALUATION_TRANSPORT_FAILED", "EVALUATOR_FAILED"]


def test_junit_details_name_the_code(tmp_path: Path) -> None:
    doc = base()
    doc["scenarios"][0]["steps"][0]["input"] = {"text": "hi", "locale": "en"}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    run = cl.run(path, cl.agents.function(lambda messages: "ok", strict_input=True), progress=False)
    xml = run.save(tmp_path / "r.xml").read_text(encoding="utf-8")
    assert "code: EVALUATION_AGENT_INPUT_INVALID" in xml
