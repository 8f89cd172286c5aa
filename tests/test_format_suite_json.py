"""The JSON evaluation-suite format (intention-kernel): what loads, and every problem it reports."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import CORPUS, UPSTREAM_DOCS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convlab as cl
from convlab.formats import _suite_json_check as ck
from convlab.formats.suite_json import parse_suite_assertion
from convlab.model.assertions import All, Any_, Check, Custom, Not

SUITE = CORPUS / "intention-kernel" / "intention-kernel_evaluation.suite.json"


# ---------------------------------------------------------------- helpers


def check(**kw: Any) -> dict[str, Any]:
    base = {"id": "a", "kind": "check", "path": ["response", "status"], "operator": "equals"}
    return {**base, "value": "completed", **kw}


def step(**kw: Any) -> dict[str, Any]:
    return {"id": "st", "input": {"text": "hi"}, "assertions": [check()], **kw}


def scenario(**kw: Any) -> dict[str, Any]:
    return {"id": "sc", "name": "Sc", "writePolicy": "read_only", "steps": [step()], **kw}


def suite(**kw: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "id": "s", "name": "S", "scenarios": [scenario()], **kw}


def write(folder: Path, data: Any, name: str = "s.json") -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), "utf-8")
    return path


def problems(folder: Path, data: Any) -> list[cl.Problem]:
    path = write(folder, data)
    with pytest.raises(cl.SuiteError) as info:
        cl.load(path)
    assert all(p.file == str(path) for p in info.value.problems)
    return info.value.problems


def at(found: list[cl.Problem], path: str) -> cl.Problem:
    hits = [p for p in found if p.path == path]
    assert hits, f"no problem at {path}; got:\n" + "\n".join(map(str, found))
    return hits[0]


def line_with(text: str, marker: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if marker in line)


# ------------------------------------------- intention-kernel's page and its example suite


def _seed_text() -> str:
    """intention-kernel's "Writing scenarios" page, as published."""
    return (UPSTREAM_DOCS / "intention-kernel_evaluation-scenarios.txt").read_text("utf-8")


def _json_at(text: str, start: int) -> Any:
    return json.JSONDecoder().raw_decode(text, start)[0]


def test_seed_complete_definition_loads_as_described(tmp_path: Path) -> None:
    seed = _seed_text()
    doc = _json_at(seed, seed.index('{\n  "schemaVersion"'))
    text = json.dumps(doc, indent=2)
    s = cl.load(write(tmp_path, text))
    assert (s.id, s.name, s.metadata) == (
        "product-selection",
        "Product selection",
        {"useCase": "A customer chooses a product"},
    )
    assert s.sources[0].format == "suite_json" and s.assertions == []
    (case,) = s.cases
    assert (case.id, case.mode, case.write_policy, case.tags) == (
        "browse-and-select",
        "turns",
        "read_only",
        ["catalogue", "selection"],
    )
    assert case.name == "Choose from the displayed products"
    assert case.description.startswith("Show available products, accept the first option")
    assert case.source is not None and case.source.line == line_with(text, "browse-and-select") - 1
    search, select = case.turns
    assert (search.id, search.input.text, search.input.selection) == (
        "search",
        "Show available products",
        None,
    )
    assert [a.id for a in search.assertions] == ["completed", "choice", "options"]
    options = search.assertions[2]
    assert isinstance(options, Check)
    assert (options.path, options.operator) == (["response", "interaction", "options"], "exists")
    assert select.input.selection is not None and select.input.selection.option_index == 0
    recorded, closed = select.assertions
    assert isinstance(recorded, Check) and recorded.operator == "contains"
    assert recorded.value == {"type": "product.selected"}
    assert isinstance(closed, Check) and closed.operator == "absent"
    (final,) = case.assertions
    assert isinstance(final, Check) and final.id == "final-response-completed"
    assert s.df.loc[0, "assertions"] == 6 and s.df.loc[0, "turns"] == 2


def test_seed_variants_fragment_replaces_inputs(tmp_path: Path) -> None:
    seed = _seed_text()
    fragment = _json_at(seed, seed.index("{", seed.index("Variants let one step")))
    s = cl.load(write(tmp_path, suite(scenarios=[scenario(steps=[fragment])])))
    (turn,) = s.cases[0].turns
    assert turn.input.text == "Show available products"
    assert [(v.id, v.input.text) for v in turn.variants] == [
        ("direct", "Show available products"),
        ("polite", "Please show available products"),
    ]


@pytest.mark.parametrize(
    ("marker", "selection"),
    [
        ("What services", None),
        ('"optionIndex": 0 } }', {"option_index": 0}),
        ("Desk lamp", {"option_label": "Desk lamp"}),
        ("published-option-id", {"option_id": "published-option-id"}),
    ],
)
def test_seed_input_examples(tmp_path: Path, marker: str, selection: Any) -> None:
    line = next(x for x in _seed_text().splitlines() if x.startswith("{") and marker in x)
    given = json.loads(line)
    s = cl.load(write(tmp_path, suite(scenarios=[scenario(steps=[step(input=given)])])))
    got = s.cases[0].turns[0].input
    assert got.text == given["text"]
    dumped = got.selection.model_dump(exclude_none=True) if got.selection else None
    assert dumped == selection


def test_corpus_suite() -> None:
    s = cl.load(SUITE)
    assert (s.id, [c.id for c in s.cases]) == ("catalogue", ["choose-product", "availability"])
    choose, availability = s.cases
    assert [v.id for v in choose.turns[0].variants] == ["direct", "polite"]
    assert [v.id for v in availability.turns[0].variants] == ["available", "empty"]
    assert choose.turns[0].assertions[2].value == 2  # length
    (custom,) = choose.assertions
    assert isinstance(custom, Custom) and custom.evaluator == "catalogue.selected-option"
    assert custom.parameters == {"searchStepId": "search", "selectionStepId": "select"}
    assert custom.label is not None and custom.label.startswith("The stored selection")
    outcome = availability.turns[0].assertions[1]
    assert isinstance(outcome, Any_) and [a.id for a in outcome.assertions] == [
        "products-offered",
        "empty-catalogue-explained",
    ]
    assert all(isinstance(a, All) for a in outcome.assertions)
    assert [a.id for a in s.assertions] == ["no-pending-cases"]
    assert [c.source.line for c in s.cases if c.source] == [6, 45]
    assert list(s.df["case_id"]) == ["choose-product", "availability"]


def test_native_json_is_not_claimed_and_round_trips(tmp_path: Path) -> None:
    s = cl.load(SUITE)
    again = cl.load(write(tmp_path, s.to_json(), "native.json"))
    assert again == s


def test_equals_null_survives_the_native_round_trip(tmp_path: Path) -> None:
    data = suite()
    data["scenarios"][0]["steps"][0]["assertions"] = [check(value=None)]
    s = cl.load(write(tmp_path, data))
    assert cl.load(write(tmp_path, s.to_json(), "native.json")) == s


def test_detection_in_a_folder(tmp_path: Path) -> None:
    from convlab.formats import suite_json

    write(tmp_path, json.loads((SUITE).read_text()), "catalogue.json")
    write(tmp_path, {"name": "package", "scenarios": "not a suite"}, "package.json")
    s = cl.load(tmp_path)  # the unrelated .json is not claimed, so it is skipped
    assert [c.id for c in s.cases] == ["choose-product", "availability"]
    assert suite_json.sniff(tmp_path / "catalogue.json", (tmp_path / "catalogue.json").read_text())
    assert suite_json.load is suite_json.load_suite_json


def test_trimmed_strings_and_whole_numbers(tmp_path: Path) -> None:
    data = suite(name="  S  ", scenarios=[scenario(name=" Sc ", skipReason=" later ")])
    data["schemaVersion"] = 1.0
    data["scenarios"][0]["steps"][0]["assertions"] = [
        check(operator="length", value=2.0),
        check(id="b", operator="exists", value="ignored"),
        check(id="c", path=["items", 0.0]),
    ]
    data["scenarios"][0]["steps"][0]["input"] = {
        "text": "",
        "locale": "en",
        "selection": {"optionIndex": 1.0},
    }
    s = cl.load(write(tmp_path, data))
    case = s.cases[0]
    assert (s.name, case.name, case.skip) == ("S", "Sc", "later")
    length, exists, indexed = case.turns[0].assertions
    assert length.value == 2 and isinstance(length.value, int)
    assert exists.value is None and indexed.path == ["items", 0]
    given = case.turns[0].input
    # an extra key is kept, and refused when the turn is sent (agentAdapter.ts inputSchema)
    assert (given.text, given.extra["locale"]) == ("", "en")
    assert given.invalid == "input.locale: unknown field 'locale'; allowed fields: text, selection"


# ---------------------------------------------------------------- every rule of §3.1


def _set(path: str, value: Any) -> Any:
    """A mutation: set the value at a dotted path of the minimal suite (None deletes)."""

    def apply(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
        node: Any = doc
        for part in parents:
            node = node[part]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value

    return apply


_DELETE = object()
S0 = "scenarios/0"
T0 = "scenarios/0/steps/0"
A0 = "scenarios/0/steps/0/assertions/0"
LONG = "x" * 161

RULES = [
    # schemaVersion literal 1
    ("version 2", _set("schemaVersion", 2), "schemaVersion", "unsupported schemaVersion 2"),
    ("version text", _set("schemaVersion", "1"), "schemaVersion", "unsupported schemaVersion '1'"),
    # identifiers
    ("suite id spaces", _set("id", "a b"), "id", "invalid identifier 'a b'"),
    ("id leading dash", _set(f"{S0}/id", "-x"), "scenarios[0].id", "start with a letter or digit"),
    ("id empty", _set(f"{T0}/id", ""), "scenarios[0].steps[0].id", "1-160 characters, got 0"),
    ("id too long", _set(f"{A0}/id", LONG), "scenarios[0].steps[0].assertions[0].id", "got 161"),
    (
        "id number",
        _set(f"{S0}/id", 7),
        "scenarios[0].id",
        "expected an identifier string, got number",
    ),
    ("id newline", _set("id", "ab\n"), "id", "invalid identifier"),
    # names and texts
    ("name blank", _set("name", "   "), "name", "must not be empty or only spaces"),
    (
        "name long",
        _set(f"{S0}/name", "n" * 501),
        "scenarios[0].name",
        "at most 500 characters, got 501",
    ),
    (
        "name missing",
        _set(f"{S0}/name", _DELETE),
        "scenarios[0].name",
        "missing required field 'name'",
    ),
    (
        "description",
        _set(f"{S0}/description", "d" * 5001),
        "scenarios[0].description",
        "at most 5000",
    ),
    ("skip blank", _set(f"{S0}/skipReason", " \t"), "scenarios[0].skipReason", "must not be empty"),
    ("skip long", _set(f"{S0}/skipReason", "s" * 2001), "scenarios[0].skipReason", "at most 2000"),
    ("tag empty", _set(f"{S0}/tags", ["ok", ""]), "scenarios[0].tags[1]", "must not be empty"),
    ("tag long", _set(f"{S0}/tags", [LONG]), "scenarios[0].tags[0]", "at most 160 characters"),
    (
        "tags many",
        _set(f"{S0}/tags", ["t"] * 101),
        "scenarios[0].tags",
        "at most 100 tags, got 101",
    ),
    (
        "label long",
        _set(f"{A0}/label", "l" * 501),
        "scenarios[0].steps[0].assertions[0].label",
        "500",
    ),
    (
        "policy",
        _set(f"{S0}/writePolicy", "readonly"),
        "scenarios[0].writePolicy",
        "did you mean 'read_only'?",
    ),
    ("metadata", _set("metadata", [1]), "metadata", "expected a JSON object, got array"),
    # sizes
    ("no scenarios", _set("scenarios", []), "scenarios", "needs at least 1 scenario, got 0"),
    ("no steps", _set(f"{S0}/steps", []), "scenarios[0].steps", "needs at least 1 step, got 0"),
    (
        "steps many",
        _set(f"{S0}/steps", [step(id=f"s{i}") for i in range(501)]),
        "scenarios[0].steps",
        "at most 500 steps",
    ),
    (
        "no variants",
        _set(f"{T0}/variants", []),
        "scenarios[0].steps[0].variants",
        "at least 1 variant, got 0",
    ),
    (
        "variants many",
        _set(f"{T0}/variants", [{"id": f"v{i}", "input": {"text": ""}} for i in range(101)]),
        "scenarios[0].steps[0].variants",
        "at most 100 variants, got 101",
    ),
    (
        "assertions many",
        _set(f"{T0}/assertions", [check(id=f"a{i}") for i in range(201)]),
        "scenarios[0].steps[0].assertions",
        "at most 200 assertions, got 201",
    ),
    (
        "any empty",
        _set(A0, {"id": "g", "kind": "any", "assertions": []}),
        "scenarios[0].steps[0].assertions[0].assertions",
        "at least 1 assertion, got 0",
    ),
    (
        "all many",
        _set(A0, {"id": "g", "kind": "all", "assertions": [check(id=f"c{i}") for i in range(101)]}),
        "scenarios[0].steps[0].assertions[0].assertions",
        "at most 100 assertions, got 101",
    ),
    # paths
    (
        "path long",
        _set(f"{A0}/path", ["p"] * 41),
        "scenarios[0].steps[0].assertions[0].path",
        "at most 40 path segments",
    ),
    (
        "segment long",
        _set(f"{A0}/path", ["p" * 241]),
        "scenarios[0].steps[0].assertions[0].path[0]",
        "at most 240",
    ),
    (
        "proto",
        _set(f"{A0}/path", ["__proto__"]),
        "scenarios[0].steps[0].assertions[0].path[0]",
        "'__proto__' is not allowed",
    ),
    (
        "prototype",
        _set(f"{A0}/path", ["a", "prototype"]),
        "scenarios[0].steps[0].assertions[0].path[1]",
        "not allowed",
    ),
    (
        "constructor",
        _set(f"{A0}/path", ["constructor"]),
        "scenarios[0].steps[0].assertions[0].path[0]",
        "not allowed",
    ),
    (
        "negative",
        _set(f"{A0}/path", [-1]),
        "scenarios[0].steps[0].assertions[0].path[0]",
        "non-negative integer, got -1",
    ),
    (
        "fraction",
        _set(f"{A0}/path", [1.5]),
        "scenarios[0].steps[0].assertions[0].path[0]",
        "got 1.5",
    ),
    (
        "bool segment",
        _set(f"{A0}/path", [True]),
        "scenarios[0].steps[0].assertions[0].path[0]",
        "got True",
    ),
    (
        "path text",
        _set(f"{A0}/path", "a.b"),
        "scenarios[0].steps[0].assertions[0].path",
        "expected an array of path segments",
    ),
    # unknown fields, with a did-you-mean
    (
        "suite field",
        _set("scenario", []),
        "scenario",
        "unknown field 'scenario' (did you mean 'scenarios'?)",
    ),
    (
        "scenario field",
        _set(f"{S0}/write_policy", "x"),
        "scenarios[0].write_policy",
        "did you mean 'writePolicy'?",
    ),
    (
        "step field",
        _set(f"{T0}/assertion", []),
        "scenarios[0].steps[0].assertion",
        "did you mean 'assertions'?",
    ),
    (
        "variant field",
        _set(f"{T0}/variants", [{"id": "v", "input": {"text": ""}, "name": "x"}]),
        "scenarios[0].steps[0].variants[0].name",
        "unknown field 'name'",
    ),
    (
        "check field",
        _set(f"{A0}/expected", 1),
        "scenarios[0].steps[0].assertions[0].expected",
        "unknown field 'expected'",
    ),
    (
        "not field",
        _set(A0, {"id": "n", "kind": "not", "assertions": [check()]}),
        "scenarios[0].steps[0].assertions[0].assertions",
        "did you mean 'assertion'?",
    ),
    # operators and values
    (
        "unknown operator",
        _set(f"{A0}/operator", "equal"),
        "scenarios[0].steps[0].assertions[0].operator",
        "unknown operator 'equal' (did you mean 'equals'?)",
    ),
    (
        "no value",
        _set(f"{A0}/value", _DELETE),
        "scenarios[0].steps[0].assertions[0].value",
        "operator 'equals' needs a 'value'",
    ),
    (
        "gte text",
        _set(A0, check(operator="gte", value="3")),
        "scenarios[0].steps[0].assertions[0].value",
        "'gte' needs a number value, got string",
    ),
    (
        "lte bool",
        _set(A0, check(operator="lte", value=True)),
        "scenarios[0].steps[0].assertions[0].value",
        "'lte' needs a number value, got boolean",
    ),
    (
        "length fraction",
        _set(A0, check(operator="length", value=1.5)),
        "scenarios[0].steps[0].assertions[0].value",
        "non-negative integer value, got 1.5",
    ),
    (
        "length negative",
        _set(A0, check(operator="length", value=-1)),
        "scenarios[0].steps[0].assertions[0].value",
        "got -1",
    ),
    (
        "length huge",
        _set(A0, check(operator="length", value=2**53)),
        "scenarios[0].steps[0].assertions[0].value",
        "non-negative integer",
    ),
    (
        "unknown kind",
        _set(f"{A0}/kind", "chek"),
        "scenarios[0].steps[0].assertions[0].kind",
        "unknown assertion kind 'chek' (did you mean 'check'?)",
    ),
    (
        "no kind",
        _set(f"{A0}/kind", _DELETE),
        "scenarios[0].steps[0].assertions[0].kind",
        "missing required field 'kind'",
    ),
    (
        "assertion not object",
        _set(A0, "exists"),
        "scenarios[0].steps[0].assertions[0]",
        "expected an assertion object, got string",
    ),
    # custom
    (
        "custom no parameters",
        _set(A0, {"id": "c", "kind": "custom", "evaluator": "e"}),
        "scenarios[0].steps[0].assertions[0].parameters",
        "missing required field 'parameters'",
    ),
    (
        "custom evaluator",
        _set(A0, {"id": "c", "kind": "custom", "evaluator": "a b", "parameters": {}}),
        "scenarios[0].steps[0].assertions[0].evaluator",
        "invalid identifier",
    ),
    (
        "custom parameters",
        _set(A0, {"id": "c", "kind": "custom", "evaluator": "e", "parameters": []}),
        "scenarios[0].steps[0].assertions[0].parameters",
        "expected a JSON object, got array",
    ),
    (
        "custom no evaluator",
        _set(A0, {"id": "c", "kind": "custom", "parameters": {}}),
        "scenarios[0].steps[0].assertions[0].evaluator",
        "missing required field 'evaluator'",
    ),
    # inputs and selection
    (
        "no input",
        _set(f"{T0}/input", _DELETE),
        "scenarios[0].steps[0].input",
        "missing required field 'input'",
    ),
    (
        "input array",
        _set(f"{T0}/input", ["hi"]),
        "scenarios[0].steps[0].input",
        "expected an input object, got array",
    ),
    # uniqueness (both occurrences named)
    (
        "dup scenario",
        _set("scenarios", [scenario(), scenario()]),
        "scenarios[1].id",
        "duplicate scenario id 'sc' (first at scenarios[0].id, line",
    ),
    (
        "dup step",
        _set(f"{S0}/steps", [step(), step()]),
        "scenarios[0].steps[1].id",
        "duplicate step id 'st' (first at scenarios[0].steps[0].id",
    ),
    (
        "dup variant",
        _set(f"{T0}/variants", [{"id": "v", "input": {"text": ""}}] * 2),
        "scenarios[0].steps[0].variants[1].id",
        "duplicate variant id 'v'",
    ),
    (
        "dup assertion",
        _set(f"{T0}/assertions", [check(), check()]),
        "scenarios[0].steps[0].assertions[1].id",
        "duplicate assertion id 'a'",
    ),
    (
        "dup nested",
        _set(
            A0,
            {
                "id": "g",
                "kind": "any",
                "assertions": [{"id": "n", "kind": "all", "assertions": [check(), check()]}],
            },
        ),
        "scenarios[0].steps[0].assertions[0].assertions[0].assertions[1].id",
        "(first at scenarios[0].steps[0].assertions[0].assertions[0].assertions[0].id",
    ),
    (
        "dup final",
        _set(f"{S0}/assertions", [check(), check()]),
        "scenarios[0].assertions[1].id",
        "duplicate assertion id",
    ),
    (
        "dup suite",
        _set("assertions", [check(), check()]),
        "assertions[1].id",
        "EVALUATION_SUITE_INVALID",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "path", "message"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_rule(tmp_path: Path, mutate: Any, path: str, message: str) -> None:
    data = suite()
    mutate(data)
    found = at(problems(tmp_path, data), path)
    assert message in found.message
    text = (tmp_path / "s.json").read_text()
    assert found.line is not None and 1 <= found.line <= text.count("\n") + 1


# intention-kernel checks a step input when the turn is sent, with the direct adapter's strict
# `inputSchema` (agentAdapter.ts `send`; schema.ts `step.input` is any JSON object): these
# files load, and the turn that sends the input errs with EVALUATION_AGENT_INPUT_INVALID.
INPUT_RULES: list[tuple[str, Any, str, str]] = [
    (
        "selection field",
        _set(f"{T0}/input", {"text": "", "selection": {"optionIndex": 0, "index": 1}}),
        "scenarios[0].steps[0].input.selection.index",
        "unknown field 'index'",
    ),
    (
        "input text",
        _set(f"{T0}/input", {"query": "x"}),
        "scenarios[0].steps[0].input.text",
        "missing required field 'text'",
    ),
    (
        "text number",
        _set(f"{T0}/input", {"text": 1}),
        "scenarios[0].steps[0].input.text",
        "expected a string, got number",
    ),
    (
        "text long",
        _set(f"{T0}/input", {"text": "t" * 10001}),
        "scenarios[0].steps[0].input.text",
        "at most 10000 characters",
    ),
    (
        "selection none",
        _set(f"{T0}/input", {"text": "", "selection": {}}),
        "scenarios[0].steps[0].input.selection",
        "exactly one of optionIndex, optionLabel, optionId, got none",
    ),
    (
        "selection two",
        _set(f"{T0}/input", {"text": "", "selection": {"optionIndex": 0, "optionId": "x"}}),
        "scenarios[0].steps[0].input.selection",
        "got optionIndex, optionId",
    ),
    (
        "option index",
        _set(f"{T0}/input", {"text": "", "selection": {"optionIndex": -1}}),
        "scenarios[0].steps[0].input.selection.optionIndex",
        "non-negative integer, got -1",
    ),
    (
        "option index text",
        _set(f"{T0}/input", {"text": "", "selection": {"optionIndex": "0"}}),
        "scenarios[0].steps[0].input.selection.optionIndex",
        "got '0'",
    ),
    (
        "option label",
        _set(f"{T0}/input", {"text": "", "selection": {"optionLabel": ""}}),
        "scenarios[0].steps[0].input.selection.optionLabel",
        "must not be empty",
    ),
    (
        "option null",
        _set(f"{T0}/input", {"text": "", "selection": {"optionId": None}}),
        "scenarios[0].steps[0].input.selection.optionId",
        "expected a string, got null",
    ),
    (
        "variant input",
        _set(f"{T0}/variants", [{"id": "v", "input": {}}]),
        "scenarios[0].steps[0].variants[0].input.text",
        "missing required field 'text'",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "path", "message"),
    [r[1:] for r in INPUT_RULES],
    ids=[r[0] for r in INPUT_RULES],
)
def test_input_rule_loads_and_is_refused_at_turn_time(
    tmp_path: Path, mutate: Any, path: str, message: str
) -> None:
    data = suite()
    mutate(data)
    turn = cl.load(write(tmp_path, data)).cases[0].turns[0]
    given = turn.variants[0].input if ".variants[" in path else turn.input
    assert given.invalid is not None
    where = "input" + path.split(".input", 1)[1]
    assert f"{where}: " in given.invalid and message in given.invalid
    direct = cl.agents.function(lambda messages: "ok", strict_input=True)  # the direct adapter
    run = cl.run(write(tmp_path, data), direct, progress=False)
    (result,) = run.results
    assert (result.status, result.code) == ("error", "EVALUATION_AGENT_INPUT_INVALID")
    assert result.turns[0].code == "EVALUATION_AGENT_INPUT_INVALID"


def test_missing_schema_version_is_named(tmp_path: Path) -> None:
    # intention-kernel schema.ts `parseEvaluationSuite`: `schemaVersion: z.literal(1)` is
    # required, so its EVALUATION_SUITE_INVALID names the path "schemaVersion"
    data = suite()
    del data["schemaVersion"]
    path = write(tmp_path, data)
    for kwargs in ({}, {"format": "suite_json"}):
        with pytest.raises(cl.SuiteError) as info:
            cl.load(path, **kwargs)  # claimed by its scenarios' steps
        assert str(info.value) == (
            f"{path}:1: schemaVersion: missing required field 'schemaVersion'"
        )


def test_unknown_field_codes_and_choices(tmp_path: Path) -> None:
    found = at(problems(tmp_path, suite(nmae="x")), "nmae")
    assert found.message == (
        "unknown field 'nmae' (did you mean 'name'?); allowed fields: schemaVersion, id, name, "
        "metadata, scenarios, assertions [EVALUATION_SUITE_INVALID]"
    )


def test_ids_may_repeat_across_levels(tmp_path: Path) -> None:
    data = suite(assertions=[check(id="x")])
    data["scenarios"] = [
        scenario(
            id="x", steps=[step(id="x", assertions=[check(id="x")])], assertions=[check(id="x")]
        ),
        scenario(id="y", steps=[step(id="x", variants=[{"id": "x", "input": {"text": ""}}])]),
    ]
    assert len(cl.load(write(tmp_path, data)).cases) == 2


# ---------------------------------------------------------------- lines, syntax, limits

BAD = """{
  "schemaVersion": 1,
  "id": "bad",
  "name": "Bad",
  "scenarios": [
    {
      "id": "a",
      "name": "A",
      "writePolicy": "read_only",
      "steps": [
        {
          "id": "s",
          "input": { "text": "hi" },
          "assertions": [
            { "id": "x", "kind": "check", "path": ["r"], "operator": "equal", "value": 1 },
            { "id": "x", "kind": "check", "path": ["r"], "operator": "exists" }
          ]
        }
      ]
    },
    {
      "id": "a",
      "name": "B",
      "writePolicy": "read_only",
      "steps": [{ "id": "t", "input": {}, "colour": 1 }]
    }
  ]
}
"""


def test_every_problem_with_file_line_and_path(tmp_path: Path) -> None:
    path = write(tmp_path, BAD)
    with pytest.raises(cl.SuiteError) as info:
        cl.load(path)
    assert str(info.value).splitlines() == [
        f"{path}:15: scenarios[0].steps[0].assertions[0].operator: unknown operator 'equal' "
        "(did you mean 'equals'?); one of equals, matches, contains, exists, absent, gte, lte, "
        "length",
        f"{path}:16: scenarios[0].steps[0].assertions[1].id: duplicate assertion id 'x' among "
        "sibling assertions (first at scenarios[0].steps[0].assertions[0].id, line 15) "
        "[EVALUATION_SUITE_INVALID]",
        f"{path}:25: scenarios[1].steps[0].colour: unknown field 'colour'; allowed fields: id, "
        "input, assertions, variants [EVALUATION_SUITE_INVALID]",
        # no `text` is refused when the turn is sent, not at load (agentAdapter.ts `send`)
        f"{path}:22: scenarios[1].id: duplicate scenario id 'a' (first at scenarios[0].id, "
        "line 7) [EVALUATION_SUITE_INVALID]",
    ]


def test_missing_field_points_at_its_object(tmp_path: Path) -> None:
    text = BAD.replace('"name": "B",', "")
    found = at(problems(tmp_path, text), "scenarios[1].name")
    assert found.line == 21  # the scenario object's opening brace


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            '{\n  "schemaVersion": 1,\n  "scenarios": [\n    {,}\n  ]\n}',
            4,
            "invalid JSON: Expecting",
        ),
        ('{"schemaVersion": 1, "scenarios": []', 1, "invalid JSON: Expecting ',' delimiter"),
        ('{"schemaVersion": 1,\n "scenarios": [],\n "x": NaN}', 3, "NaN is not a JSON number"),
        ('{"schemaVersion": 1, "scenarios": [],\n\n "x": -Infinity}', 3, "-Infinity is not a JSON"),
        ('{"schemaVersion": 1, "scenarios": [1e400]}', 1, "1e400 is not a JSON number"),
        ('{"schemaVersion": 1, "scenarios": [' + "9" * 5000 + "]}", 1, "is not a JSON number"),
    ],
)
def test_json_syntax_and_non_json_values(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    (found,) = problems(tmp_path, text)
    assert found.line == line and message in found.message


def test_not_an_object(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, '["schemaVersion", "scenarios"]')
    assert (found.line, found.path) == (1, "")
    assert found.message == "expected a JSON object (an evaluation suite), got array"


def _nest(levels: int) -> Any:
    deep: Any = "leaf"
    for _ in range(levels):
        deep = [deep]
    return deep


def test_nesting_deeper_than_60_is_a_data_limit(tmp_path: Path) -> None:
    # root is depth 0, metadata 1, the outer list 2: 58 lists put the leaf at depth 60
    assert cl.load(write(tmp_path, suite(metadata={"deep": _nest(58)})))
    (found,) = problems(tmp_path, suite(metadata={"deep": _nest(59)}))
    assert found.path == "metadata.deep" + "[0]" * 59  # the value at depth 61
    assert found.message == "JSON nested more than 60 levels deep [EVALUATION_DATA_LIMIT]"
    assert found.line == line_with((tmp_path / "s.json").read_text(), '"leaf"')


def test_nesting_beyond_python_recursion(tmp_path: Path) -> None:
    text = '{"schemaVersion": 1,\n"scenarios": ' + "[" * 50_000 + "]" * 50_000 + "}"
    (found,) = problems(tmp_path, text)
    assert found.line == 2 and "EVALUATION_DATA_LIMIT" in found.message


def test_more_than_500000_values_is_a_data_limit(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, suite(metadata={"many": [0] * 500_000}))
    assert found.path == "" and found.line == 1
    assert "more than 500000 [EVALUATION_DATA_LIMIT]" in found.message


def test_limits_on_counts_of_scenarios(tmp_path: Path) -> None:
    many = [scenario(id=f"s{i}", steps=[{"id": "t", "input": {"text": ""}}]) for i in range(10_001)]
    found = at(problems(tmp_path, suite(scenarios=many)), "scenarios")
    assert found.message == "allows at most 10000 scenarios, got 10001"


def test_all_problems_are_collected_across_scenarios(tmp_path: Path) -> None:
    bad = [scenario(id=f"s{i}", writePolicy="nope") for i in range(30)]
    found = problems(tmp_path, suite(scenarios=bad))
    assert [p.path for p in found] == [f"scenarios[{i}].writePolicy" for i in range(30)]
    assert len({p.line for p in found}) == 30


# ---------------------------------------- loading: intention-kernel's own test cases


def test_conformance_duplicate_ids_rejected(tmp_path: Path) -> None:
    data = json.loads((SUITE).read_text())
    data["scenarios"][1]["id"] = "choose-product"
    data["scenarios"][1]["steps"][0]["variants"][1]["id"] = "available"
    found = problems(tmp_path, data)
    assert {p.path for p in found} == {
        "scenarios[1].id",
        "scenarios[1].steps[0].variants[1].id",
    }


def test_conformance_unknown_operator_rejected(tmp_path: Path) -> None:
    data = json.loads((SUITE).read_text())
    data["scenarios"][1]["steps"][0]["assertions"][1]["assertions"][0]["assertions"][0][
        "operator"
    ] = "greaterThan"
    (found,) = problems(tmp_path, data)
    assert found.path == "scenarios[1].steps[0].assertions[1].assertions[0].assertions[0].operator"
    assert found.message.startswith("unknown operator 'greaterThan'")
    assert found.line == line_with((tmp_path / "s.json").read_text(), "greaterThan")


# ---------------------------------------------------------------- parse_suite_assertion


def test_parse_suite_assertion_builds_each_kind() -> None:
    spec = parse_suite_assertion(
        {
            "id": "top",
            "kind": "all",
            "label": "everything",
            "assertions": [
                {
                    "id": "c",
                    "kind": "check",
                    "path": ("response", 0),
                    "operator": "gte",
                    "value": 1,
                },
                {
                    "id": "n",
                    "kind": "not",
                    "assertion": {"id": "x", "kind": "check", "path": [], "operator": "absent"},
                },
                {
                    "id": "y",
                    "kind": "any",
                    "assertions": [
                        {
                            "id": "e",
                            "kind": "custom",
                            "evaluator": "my.eval",
                            "parameters": {"k": [1]},
                        }
                    ],
                },
            ],
        }
    )
    assert isinstance(spec, All) and spec.label == "everything"
    first, negated, either = spec.assertions
    assert isinstance(first, Check) and first.path == ["response", 0]
    assert isinstance(negated, Not) and isinstance(negated.assertion, Check)
    assert isinstance(either, Any_) and isinstance(either.assertions[0], Custom)


def test_parse_suite_assertion_detaches_its_input() -> None:
    given = {"id": "c", "kind": "check", "path": ["a"], "operator": "equals", "value": {"k": [1]}}
    spec = parse_suite_assertion(given)
    given["value"]["k"].append(2)
    assert isinstance(spec, Check) and spec.value == {"k": [1]}


def test_parse_suite_assertion_reports_every_problem() -> None:
    cyclic: dict[str, Any] = {"id": "v", "kind": "check", "path": ["a"], "operator": "equals"}
    cyclic["value"] = cyclic
    bad = {
        "id": "top",
        "kind": "any",
        "assertions": [
            {"id": "a", "kind": "check", "path": ["a"], "operator": "gt", "value": {1, 2}},
            {"id": "a", "kind": "custom", "evaluator": "e"},
            {"id": "f", "kind": "check", "path": ["a"], "operator": "lte", "value": float("nan")},
            cyclic,
        ],
    }
    with pytest.raises(cl.SuiteError) as info:
        parse_suite_assertion(bad, file="cell", line=3)
    assert str(info.value).splitlines() == [
        "cell:3: assertion.assertions[0].value: not a JSON value (set)",
        "cell:3: assertion.assertions[2].value: nan is not a JSON value",
        "cell:3: assertion.assertions[3].value: the value contains itself (a cycle) "
        "[EVALUATION_DATA_CYCLE]",
        "cell:3: assertion.assertions[0].operator: unknown operator 'gt' (did you mean 'gte'?); "
        "one of equals, matches, contains, exists, absent, gte, lte, length",
        "cell:3: assertion.assertions[1].parameters: missing required field 'parameters' "
        "(a JSON object; {} when there are none)",
        "cell:3: assertion.assertions[1].id: duplicate assertion id 'a' among sibling assertions "
        "(first at assertion.assertions[0].id) [EVALUATION_SUITE_INVALID]",
    ]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("exists", "assertion: expected an assertion object, got string"),
        (
            {"kind": "check", "path": [], "operator": "exists"},
            "assertion.id: missing required field 'id'",
        ),
        ({"id": "x", "kind": "contains", "value": "a"}, "unknown assertion kind 'contains'"),
        ({1: 2}, "assertion: object keys must be strings, got 1"),
    ],
)
def test_parse_suite_assertion_errors(given: Any, message: str) -> None:
    with pytest.raises(cl.SuiteError, match=r"^<check>: ") as info:
        parse_suite_assertion(given)
    assert message in str(info.value)


# ---------------------------------------------------------------- properties: Suite or SuiteError

FIELD_NAMES = [
    "schemaVersion",
    "id",
    "name",
    "metadata",
    "scenarios",
    "assertions",
    "description",
    "tags",
    "writePolicy",
    "skipReason",
    "steps",
    "input",
    "variants",
    "kind",
    "label",
    "path",
    "operator",
    "value",
    "assertion",
    "evaluator",
    "parameters",
    "text",
    "selection",
    "optionIndex",
    "optionLabel",
    "optionId",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", " ", "a", "read_only", "check", "exists", "equals", "all", "__proto__"])
    | st.text(max_size=8)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=25,
)
SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _loads_or_suite_error(path: Path) -> None:
    try:
        loaded = cl.load(path, format="suite_json")
    except cl.SuiteError as err:
        assert err.problems and all(p.file == str(path) for p in err.problems)
        assert all(p.line is None or p.line >= 1 for p in err.problems)
        str(err)
    else:
        assert isinstance(loaded, cl.Suite) and loaded.cases


@SETTINGS
@given(
    doc=st.fixed_dictionaries(
        {"schemaVersion": SCALARS, "scenarios": JSON},
        optional=dict.fromkeys(("id", "name", "metadata", "assertions"), JSON),
    )
)
def test_random_documents(tmp_path: Path, doc: dict[str, Any]) -> None:
    _loads_or_suite_error(write(tmp_path, doc))


def _nodes(doc: Any, loc: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [loc]
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, child in items:
        out += _nodes(child, (*loc, key))
    return out


MUTATIONS = st.sampled_from(["replace", "delete", "add", "duplicate"])


@SETTINGS
@given(data=st.data())
def test_mutated_corpus_suites(tmp_path: Path, data: st.DataObject) -> None:
    doc = json.loads((SUITE).read_text())
    for _ in range(data.draw(st.integers(1, 4))):
        loc = data.draw(st.sampled_from(_nodes(doc)[1:]))
        parent: Any = doc
        for key in loc[:-1]:
            parent = parent[key]
        how = data.draw(MUTATIONS)
        if how == "replace":
            parent[loc[-1]] = data.draw(JSON)
        elif how == "delete":
            del parent[loc[-1]]
        elif how == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(FIELD_NAMES))] = data.draw(JSON)
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[loc[-1]]))
    _loads_or_suite_error(write(tmp_path, doc))


@SETTINGS
@given(data=st.data())
def test_mutated_corpus_text(tmp_path: Path, data: st.DataObject) -> None:
    text = (SUITE).read_text()
    for _ in range(data.draw(st.integers(1, 3))):
        at_ = data.draw(st.integers(0, len(text) - 1))
        edit = data.draw(
            st.sampled_from(["", "{", "}", "[", "]", '"', ",", ":", "0", "-", "\\", "\n", "NaN"])
        )
        text = text[:at_] + edit + text[at_ + data.draw(st.integers(0, 2)) :]
    _loads_or_suite_error(write(tmp_path, text))


CHECKS = st.fixed_dictionaries(
    {"kind": st.just("check")},
    optional={
        "id": st.sampled_from(["a", "b.c", "-x", "", "a b", 3]),
        "path": st.lists(
            st.sampled_from(["a", "__proto__", "x" * 130, "y" * 250, 0, 2.0, -1, True, None]),
            max_size=42,
        )
        | st.just("a"),
        "operator": st.sampled_from([*ck.OPERATORS, "equal", 1]),
        "value": JSON,
        "label": st.sampled_from(["", "l" * 260, "l" * 501, 5]),
        "extra": st.just(1),
    },
)


@settings(max_examples=300, deadline=None)
@given(spec=CHECKS)
def test_fast_check_agrees_with_the_full_rules(spec: dict[str, Any]) -> None:
    if isinstance(spec.get("id"), str):
        ck.ident(spec["id"], (), ck.Issues())  # the fast path only trusts ids seen valid
    fast = ck._fast_check(spec)
    if fast is None:
        return
    issues = ck.Issues()
    with mock.patch.object(ck, "_fast_check", lambda _: None):
        full = ck.assertion(spec, (), issues)
    assert not issues and full == fast
