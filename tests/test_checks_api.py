"""convlab.check() in every spelling, load-time spec errors, describe_kinds(), pre-flight."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.checks import EVALUATORS, KINDS, evaluator
from convlab.checks.api import describe_kinds, parse_spec, preflight, to_spec, unknown_evaluators
from convlab.errors import UnknownNameError
from convlab.model.assertions import Contains, parse_assertion
from convlab.model.suite import Case, Checkpoint, Source, Suite, Turn, TurnInput

# ---------------------------------------------------------------- check(): the contract


def test_check_contract_from_design() -> None:
    assert cl.check("hello world", {"type": "contains", "value": "world"}).passed is True
    res = cl.check(
        cl.Reply(text="x", data={"a": 1}),
        {
            "id": "c",
            "kind": "check",
            "path": ["response", "data", "a"],
            "operator": "equals",
            "value": 2,
        },
    )
    assert res.passed is False
    assert res.message == "response.data.a: expected equals 2, got 1"
    assert (res.expected, res.actual) == (2, 1)
    text = repr(res)
    assert text.startswith("FAIL c: ") and "expected: 2" in text and "actual:   1" in text


def test_repr_of_a_pass_is_one_line() -> None:
    assert (
        repr(cl.check("hi", {"type": "contains", "value": "hi"}))
        == "PASS contains: output contains 'hi'"
    )


@pytest.mark.parametrize(
    "assertion",
    [
        {"type": "json_path", "path": "$.a", "value": 1},  # JSONL (Yao) spelling
        {"type": "regex", "value": '"a":\\s*1'},  # Yao writes the pattern as value
        {
            "id": "x",
            "kind": "check",
            "path": ["response", "data", "a"],
            "operator": "equals",
            "value": 1,
        },
        {
            "id": "all",
            "kind": "all",
            "assertions": [
                {"id": "e", "kind": "check", "path": ["response"], "operator": "exists"}
            ],
        },
        {"kind": "json_path", "path": "a", "value": 1},  # convlab's own spelling
        {"kind": "regex", "pattern": "a"},
        Contains(value='"a":1'),  # a model, used as is
    ],
)
def test_check_accepts_every_spelling(assertion: Any) -> None:
    res = cl.check({"a": 1}, assertion)  # a dict reply is structured output
    assert res.passed, res


def test_check_reply_types() -> None:
    spec = {"type": "contains", "value": "hi"}
    assert cl.check("hi", spec).passed
    assert cl.check(cl.Reply(text="hi"), spec).passed
    assert cl.check(cl.Observation(text="hi"), spec).passed
    calls = cl.Reply(text="", tool_calls=[cl.ToolCall("lookup", {"q": 1})])
    assert cl.check(calls, {"type": "tool_called", "value": "lookup"}).passed
    assert cl.check(calls, {"type": "tool_called", "name": "lookup", "arguments": {"q": 1}}).passed


def test_check_with_a_judge_and_messages() -> None:
    seen: list[str] = []

    def judge(messages: list[dict[str, Any]]) -> str:
        seen.append(messages[-1]["content"])
        return "yes"

    res = cl.check(
        "Bonjour",
        {"kind": "judge", "question": "Is it French?"},
        judge=judge,
        messages=[{"role": "user", "content": "Greet me in French"}],
    )
    assert res.passed and "Greet me in French" in seen[0]
    no_judge = cl.check("Bonjour", {"kind": "judge", "question": "Is it French?"})
    assert no_judge.status == "error" and "judge=" in no_judge.message


def test_check_works_inside_a_running_loop() -> None:
    async def cell() -> bool:  # a notebook cell runs under a live event loop
        return cl.check("hi", {"type": "contains", "value": "hi"}).passed

    assert asyncio.run(cell())


def test_jsonl_bare_type_shorthand() -> None:
    assert cl.check("anything", "contains").passed  # contains "" always passes


# ---------------------------------------------------------------- bad specs: errors with paths


def test_unknown_kind_has_a_did_you_mean() -> None:
    with pytest.raises(cl.SuiteError) as err:
        parse_spec(
            {"kind": "contians", "value": "x"}, file="s.yaml", line=3, path="cases[0].assertions[1]"
        )
    [problem] = err.value.problems
    assert (problem.file, problem.line, problem.path) == (
        "s.yaml",
        3,
        "cases[0].assertions[1].kind",
    )
    assert "unknown assertion kind 'contians'" in problem.message
    assert "Did you mean 'contains'" in problem.message


def test_nested_problems_have_their_field_paths() -> None:
    bad = {
        "kind": "all",
        "assertions": [
            {"kind": "regex", "pattern": "(unclosed"},
            {"kind": "check", "path": ["a"], "operator": "bigger", "value": 1},
            {"kind": "not", "assertion": {"kind": "judge"}},
        ],
    }
    with pytest.raises(cl.SuiteError) as err:
        parse_spec(bad, path="assert")
    by_path = {p.path: p.message for p in err.value.problems}
    assert "cannot compile regex" in by_path["assert.assertions[0].pattern"]
    assert "'equals'" in by_path["assert.assertions[1].operator"]  # lists the valid operators
    assert "exactly one of 'question' or 'rubric'" in by_path["assert.assertions[2].assertion"]


def test_bad_specs_in_format_spellings_raise_suite_errors() -> None:
    with pytest.raises(cl.SuiteError, match="cannot compile regex"):
        cl.check("x", {"type": "regex", "value": "(bad"})
    with pytest.raises(cl.SuiteError, match="Did you mean 'contains'"):
        cl.check("x", {"type": "contians", "value": "x"})
    with pytest.raises(cl.SuiteError, match="operator"):
        cl.check(
            "x",
            {"id": "a", "kind": "check", "path": ["response"], "operator": "bigger", "value": 1},
        )
    with pytest.raises(cl.SuiteError, match="needs a value"):
        parse_spec({"kind": "check", "path": ["a"], "operator": "equals"})
    with pytest.raises(cl.SuiteError, match="takes no value"):
        parse_spec({"kind": "check", "path": ["a"], "operator": "exists", "value": 1})


def test_yaml_matcher_and_grader_problems_are_load_time_errors(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: demo\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
        "test_cases:\n"
        "  - name: t1\n"
        "    turns:\n"
        "      - input: subtract\n"
        "        expected_tools:\n"
        "          - name: subtract\n"
        "            args:\n"
        "              a: {fuzzy: '1', regex: '^1$'}\n"
        "        evaluations:\n"
        "          - type: code\n"
        "            grader: 'no_such_pkg_zz.mod:fn'\n"
    )
    with pytest.raises(cl.SuiteError) as err:
        cl.load(agent)
    paths = {p.path: p.message for p in err.value.problems}
    assert (
        "exactly one of 'fuzzy' or 'regex'"
        in paths["test_cases[0].turns[0].expected_tools[0].args.a"]
    )
    assert "no_such_pkg_zz" in paths["test_cases[0].turns[0].evaluations[0].grader"]


def test_to_spec_keeps_models_and_reads_native_dicts() -> None:
    spec = parse_assertion({"kind": "contains", "value": "x"})
    assert to_spec(spec) is spec
    assert to_spec({"kind": "contains", "value": "x"}) == spec


# ---------------------------------------------------------------- describe_kinds and docstrings


def test_describe_kinds_lists_every_kind_with_one_line() -> None:
    rows = describe_kinds()
    names = [n for n, _ in rows]
    assert names == sorted(names) == KINDS.names()
    expected = {
        "equals", "contains", "not_contains", "regex", "json_path", "type", "tool_called",
        "tool_result", "script", "agent", "check", "all", "any", "not", "custom",
        "expected_tools", "metric", "grader", "python_test", "judge",
    }  # fmt: skip
    assert expected <= set(names)
    for name, line in rows:
        assert line and "\n" not in line and len(line) < 120, name


def test_every_kind_has_a_readable_docstring() -> None:
    for name in KINDS.names():
        doc = inspect.getdoc(KINDS.get(name)) or ""
        assert len(doc.splitlines()) >= 2, f"{name} needs more than a one-line docstring"


# ---------------------------------------------------------------- pre-flight (before any case runs)


@pytest.fixture
def known_evaluator(register_evaluator: Any) -> Any:
    @register_evaluator("test_known")
    def known(ctx: Any, parameters: dict[str, Any]) -> bool:
        return True

    return known


def _suite() -> Suite:
    custom = {"kind": "custom", "id": "c", "evaluator": "test_knwon"}
    nested = {"kind": "not", "id": "n", "assertion": {"kind": "any", "assertions": [custom]}}
    case = Case(
        id="s1",
        mode="turns",
        source=Source(file="suite.json", line=4),
        turns=[Turn(input=TurnInput(text="hi"), assertions=[parse_assertion(nested)])],
        assertions=[parse_assertion({"kind": "custom", "evaluator": "test_known"})],
    )
    dyn = Case(
        id="d1",
        mode="dynamic",
        input=[cl.Message(content="hi")],
        checkpoints=[
            Checkpoint(
                id="cp",
                assertion=parse_assertion({"kind": "grader", "grader": "no_such_zz.mod:fn"}),
            )
        ],
    )
    return Suite(
        id="s",
        cases=[case, dyn],
        assertions=[parse_assertion({"kind": "custom", "evaluator": "other_missing"})],
        sources=[Source(file="suite.json")],
    )


def test_unknown_evaluators_walks_every_assertion(known_evaluator: Any) -> None:
    problems = unknown_evaluators(_suite())
    assert [(p.file, p.line, p.path) for p in problems] == [
        ("suite.json", None, "assertions[0].evaluator"),
        ("suite.json", 4, "turns[0].assertions[0].assertion.assertions[0].evaluator"),
    ]
    assert "Did you mean 'test_known'" in problems[1].message


def test_preflight_adds_graders_that_do_not_import(known_evaluator: Any) -> None:
    problems = preflight(_suite())
    assert problems[-1].path == "checkpoints[0].assertion.grader"
    assert "cannot import grader 'no_such_zz.mod:fn'" in problems[-1].message


def test_results_of_every_format_serialize_to_json() -> None:
    reply = cl.Reply(text='{"a": 1}', tool_calls=[cl.ToolCall("t", {"x": 1}, result={"ok": True})])
    # (spec, kind, status, expected, actual) as they read in the JSON dump
    cases: list[tuple[Any, str, str, Any, Any]] = [
        ({"type": "equals", "value": 1}, "equals", "failed", 1, '{"a": 1}'),
        ({"type": "json_path", "path": "a", "value": 1}, "json_path", "passed", 1, 1),
        (
            {"type": "tool_result", "value": {"tool": "t", "result": {"ok": True}}},
            "tool_result",
            "passed",
            {"tool": "t", "result": {"ok": True}},
            {"ok": True},
        ),
        (
            {
                "id": "a",
                "kind": "any",
                "assertions": [
                    {"id": "b", "kind": "check", "path": ["response"], "operator": "exists"}
                ],
            },
            "any",
            "passed",
            None,
            None,
        ),
        (
            {
                "kind": "expected_tools",
                "tools": [{"name": "t", "args": {"x": {"mode": "fuzzy", "value": "1"}}}],
            },
            "expected_tools",
            "passed",
            [{"name": "t", "args": {"x": {"fuzzy": "1"}}, "count": 1}],
            [{"name": "t", "arguments": {"x": 1}}],
        ),
        (
            {"kind": "metric", "metric": "equality", "ground_truth": '{"a": 1}'},
            "metric",
            "passed",
            '{"a": 1}',
            '{"a": 1}',
        ),
        ({"kind": "judge", "question": "ok?"}, "judge", "error", None, None),
    ]
    for spec, kind, status, expected, actual in cases:
        result = cl.check(reply, spec)
        dumped = result.to_json()
        data = json.loads(dumped)
        got = (data["kind"], data.get("status", "passed"), data.get("expected"), data.get("actual"))
        assert got == (kind, status, expected, actual), spec
        assert data["message"] == result.message and data["message"]
        assert type(result).from_json(dumped) == result  # nothing lost on the way
    nested = json.loads(cl.check(reply, cases[3][0]).to_json())
    assert [(c["id"], c["kind"], c.get("status", "passed")) for c in nested["children"]] == [
        ("b", "check", "passed")
    ]
    judged = json.loads(cl.check(reply, cases[-1][0]).to_json())
    assert judged["message"].startswith("no judge is configured")


# ---------------------------------------------------------------- registering and undoing


def test_the_evaluator_decorator_registers_and_unregister_undoes_it() -> None:
    def shout(ctx: Any, parameters: dict[str, Any]) -> bool:
        return True

    assert evaluator("test_shout")(shout) is shout
    try:
        assert EVALUATORS.get("test_shout") is shout
    finally:
        assert EVALUATORS.unregister("test_shout") is shout
    assert "test_shout" not in EVALUATORS
    with pytest.raises(UnknownNameError, match="test_shout"):
        EVALUATORS.unregister("test_shout")


def test_registered_puts_back_what_was_there() -> None:
    builtin = KINDS.get("contains")

    def other(*args: Any) -> Any:
        raise AssertionError("never called")

    with KINDS.registered("contains", other):
        assert KINDS.get("contains") is other
    assert KINDS.get("contains") is builtin
    with pytest.raises(RuntimeError, match="inside"), KINDS.registered("test_new", other):
        raise RuntimeError("inside")
    assert "test_new" not in KINDS
