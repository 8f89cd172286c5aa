"""json_path (Yao §1.6) and the JSON-suite kinds check, all, any, not, custom (§3.2).

Tables: Yao's TestAsserter_JSONPath_ArrayEquality, the JSON Path notes of Yao's agent-test
README, gou's ExtractJSON rules, and intention-kernel's operator semantics (missing vs null,
`matches` array length, `contains` string vs array, error propagation through composition)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from convlab.checks import CheckContext, evaluate
from convlab.checks._extract import extract_json, extract_path
from convlab.checks.structured import at, operate
from convlab.model.assertions import parse_assertion
from convlab.model.records import AssertionResult, Observation, TurnResult
from convlab.model.suite import Case, Turn, TurnInput


def ev(spec: dict[str, Any], obs: Observation | str | None = None, **ctx: Any) -> AssertionResult:
    if not isinstance(obs, Observation):
        obs = Observation(text=obs)
    return asyncio.run(evaluate(parse_assertion(spec), CheckContext(observation=obs, **ctx)))


def jp(path: str, value: Any, output: Any) -> AssertionResult:
    obs = Observation(text=output) if isinstance(output, str) else Observation(data=output)
    return ev({"kind": "json_path", "path": path, "value": value}, obs)


# ---------------------------------------------------------------- json_path (Yao assert_test.go)


@pytest.mark.parametrize(
    ("path", "value", "output", "passed"),
    [
        ("search_types", ["db"], {"search_types": ["db"]}, True),
        ("search_types", ["db"], {"search_types": ["web"]}, False),
        ("search_types", ["web", "db"], {"search_types": ["web", "db"]}, True),
        ("search_types", ["db", "web"], {"search_types": ["web", "db"]}, False),  # order matters
        ("status", ["active", "pending"], {"status": "active"}, True),  # IN / OR semantics
        ("status", ["active", "pending"], {"status": "inactive"}, False),
        ("need_search", True, {"need_search": True}, True),
        ("result.count", 5, {"result": {"count": 5.0}}, True),  # nested, 5 == 5.0
        ("items[0].name", "first", {"items": [{"name": "first"}, {"name": "second"}]}, True),
        ("$.field.sub", 1, {"field": {"sub": 1}}, True),  # one leading $. stripped
        ("wheres[0].in[0]", "pending", {"wheres": [{"in": ["pending"]}]}, True),
        ("groups[0]", "category", {"groups": ["category"]}, True),
        ("items[5]", None, {"items": [1]}, True),  # out of range reads as null
        ("missing", None, {"a": 1}, True),  # a missing path equals null
        ("missing", False, {"a": 1}, False),
        ("a", {"y": 2, "x": 1}, {"a": {"x": 1, "y": 2}}, True),  # order-insensitive objects
        ("a", "1", {"a": 1}, False),  # no coercion
        ("", {"a": 1}, {"a": 1}, True),  # empty path: the whole document
        ("a.b", None, {"a": "text"}, True),  # key lookup on a non-object: null
        ("[0]", 1, [1, 2], True),
    ],
)
def test_json_path_table(path: str, value: Any, output: Any, passed: bool) -> None:
    assert jp(path, value, output).passed is passed


def test_json_path_messages_show_expected_and_actual() -> None:
    ok = jp("status", "ok", {"status": "ok"})
    assert ok.message == "path 'status' equals expected value"
    one = jp("status", ["a", "b"], {"status": "b"})
    assert one.message == "path 'status' equals one of expected values"
    bad = jp("$.status", "ok", {"status": "error"})
    assert bad.message == "path '$.status': expected ok, got error"  # assertJSONPath: %v
    assert (bad.expected, bad.actual) == ("ok", "error")


def test_json_path_on_prose_without_json() -> None:
    res = jp("a", 1, "I cannot help with that.")
    assert not res.passed and res.message.startswith("output is not valid JSON: ")
    none = ev({"kind": "json_path", "path": "a", "value": 1}, Observation())
    assert none.message == "output is not a JSON object or array, got: <nil> = <nil>"  # Go %T


@pytest.mark.parametrize(
    ("text", "data"),
    [
        ('Sure:\n```json\n{"a": 1}\n```\nDone.', {"a": 1}),  # json fence in prose
        ('```\n{"a": 1}\n```', {"a": 1}),  # untagged fence, detected
        ('```python\nprint(1)\n```\n```json\n{"a": 2}\n```', {"a": 2}),  # first json block
        ('{"a": 1}', {"a": 1}),  # bare JSON
        ("  [1, 2]  ", [1, 2]),
        ("---\na: 1\nb: [x, y]", {"a": 1, "b": ["x", "y"]}),  # YAML document
        ("Answer: yes", {"Answer": "yes"}),  # prose that looks like YAML (YAML 1.2: not a bool)
        ("```yaml\nok: true\nwhen: 2024-01-01\n```", {"ok": True, "when": "2024-01-01"}),
        ('{"a": 1, // note\n "b": 2,}', {"a": 1, "b": 2}),  # comments, trailing comma
        ('{"a": [1, 2', {"a": [1, 2]}),  # cut-off output closed
        ("```python\nx = {'a': 1}\n```\n{\"a\": 1}", None),  # fences exist: no bare fallback
        ("Just some words.", None),
        ("def f():\n    return 1", None),  # code is not data
        ("", None),
    ],
)
def test_extract_json(text: str, data: Any) -> None:
    assert extract_json(text) == data


def test_json_path_reads_yaml_and_fenced_json_in_text() -> None:
    assert jp("need_search", True, '```json\n{"need_search": true}\n```').passed
    assert jp("Answer", "yes", "Answer: yes").passed


def test_extract_path_segments() -> None:
    doc = {"wheres": [{"like": "%test%", "in": ["pending"]}], "joins": [{"from": "users"}]}
    assert extract_path(doc, "wheres[0].like") == "%test%"
    assert extract_path(doc, "joins[0].from") == "users"
    assert extract_path(doc, "wheres[x]") is None
    assert extract_path(doc, "wheres[-1]") is None


# ---------------------------------------------------------------- check: at() and operators


VIEW = {
    "response": {"status": "completed", "data": {"a": 1, "n": None, "tags": ["x", "y"]}},
    "checkpoint": {"facts": [{"type": "product.selected", "id": 7}]},
}


@pytest.mark.parametrize(
    ("path", "present", "value"),
    [
        (["response", "status"], True, "completed"),
        (["response", "data", "n"], True, None),  # null is present
        (["response", "data", "zzz"], False, None),
        (["response", "data", "tags", 1], True, "y"),
        (["response", "data", "tags", "1"], True, "y"),  # "1" indexes an array
        (["response", "data", "tags", "01"], False, None),  # not a canonical index
        (["response", "data", "tags", 2], False, None),
        (["response", "data", "tags", "length"], True, 2),  # JS quirk kept
        (["response", "status", "length"], False, None),  # strings are not objects
        (["response", "interaction"], False, None),
    ],
)
def test_at(path: list[str | int], present: bool, value: Any) -> None:
    assert at(VIEW, path) == (present, value)


@pytest.mark.parametrize(
    ("op", "present", "actual", "value", "passed"),
    [
        ("equals", True, {"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}, True),
        ("equals", True, 1, "1", False),
        ("equals", True, 1, 1.0, True),
        ("equals", False, None, None, False),  # equals null on a missing path fails
        ("equals", True, None, None, True),
        ("exists", True, None, None, True),  # exists on an explicit null passes
        ("exists", False, None, None, False),
        ("absent", False, None, None, True),
        ("absent", True, None, None, False),
        ("matches", True, {"a": 1, "b": 2}, {"a": 1}, True),  # extra keys allowed
        ("matches", True, [{"a": 1, "x": 0}], [{"a": 1}], True),
        ("matches", True, [1, 2], [1], False),  # arrays need the same length
        ("matches", True, [1], {"0": 1}, False),  # an array is not an object
        ("matches", True, {"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, True),
        ("contains", True, [{"type": "p", "id": 1}], {"type": "p"}, True),  # nested subset
        ("contains", True, ["x", "y"], "y", True),
        ("contains", True, ["xy"], "x", False),  # array elements match, not substrings
        ("contains", True, "hello world", "o w", True),
        ("contains", True, "hello", "H", False),  # case-sensitive
        ("contains", True, "5 items", 5, False),  # string vs non-string value
        ("contains", True, {"a": 1}, "a", False),  # objects never contain
        ("gte", True, 5, 5, True),
        ("gte", True, 4.9, 5, False),
        ("gte", True, "9", 5, False),  # no coercion
        ("gte", True, True, 0, False),  # a bool is not a number
        ("lte", True, 3, 3.5, True),
        ("length", True, [1, 2, 3], 3, True),
        ("length", True, "abc", 3, True),
        ("length", True, "a😀", 3, True),  # UTF-16 code units, as JavaScript counts
        ("length", True, {"a": 1}, 1, False),
    ],
)
def test_operator_table(op: str, present: bool, actual: Any, value: Any, passed: bool) -> None:
    assert operate(op, present, actual, value) is passed


def test_check_reads_the_observation_view() -> None:
    obs = Observation(text="hi", data={"a": 1}, facts=[{"type": "product.selected"}])
    spec = {
        "kind": "check",
        "path": ["checkpoint", "facts"],
        "operator": "contains",
        "value": {"type": "product.selected"},
    }
    assert ev(spec, obs).passed
    absent = {"kind": "check", "path": ["response", "interaction"], "operator": "absent"}
    assert ev(absent, obs).passed


def test_check_failure_messages() -> None:
    obs = Observation(data={"a": 1})
    res = ev(
        {"kind": "check", "path": ["response", "data", "a"], "operator": "equals", "value": 2}, obs
    )
    assert res.message == "response.data.a: expected equals 2, got 1"
    assert (res.expected, res.actual, res.details["present"]) == (2, 1, True)
    miss = ev(
        {"kind": "check", "path": ["response", "data", "b"], "operator": "equals", "value": None},
        obs,
    )
    assert miss.message == "response.data.b: missing (expected equals null)"
    assert miss.details["present"] is False
    gone = ev({"kind": "check", "path": ["response", "data"], "operator": "absent"}, obs)
    assert gone.message == 'response.data: expected absent, got {"a": 1}'
    short = ev(
        {"kind": "check", "path": ["response", "data"], "operator": "length", "value": 2},
        Observation(data=[1]),
    )
    assert short.message == "response.data: expected length 2, got length 1: [1]"
    ok = ev({"kind": "check", "path": ["response", "status"], "operator": "exists"}, obs)
    assert ok.passed and ok.message == "response.status exists"


def test_check_reads_effects_from_the_world_when_the_observation_has_none() -> None:
    spec = {
        "kind": "check",
        "path": ["effects", "files", 0],
        "operator": "equals",
        "value": "a.txt",
    }
    assert ev(spec, Observation(), world={"files": ["a.txt"]}).passed
    assert ev(spec, Observation(effects={"files": ["a.txt"]})).passed


def test_suite_scope_reads_summary_and_status() -> None:
    ctx = {"scope": "suite", "summary": {"total": 3, "failed": 0}, "extra": {"status": "passed"}}
    spec = {"kind": "check", "path": ["summary", "failed"], "operator": "equals", "value": 0}
    assert ev(spec, **ctx).passed
    spec = {"kind": "check", "path": ["status"], "operator": "equals", "value": "passed"}
    assert ev(spec, **ctx).passed
    spec = {"kind": "check", "path": ["response"], "operator": "absent"}
    assert ev(spec, Observation(text="x"), **ctx).passed


# ---------------------------------------------------------------- composition


def _c(op: str, value: Any = None, path: Any = ("response", "text"), **kw: Any) -> dict[str, Any]:
    spec = {"kind": "check", "path": list(path), "operator": op, **kw}
    if op not in ("exists", "absent"):
        spec["value"] = value
    return spec


@pytest.fixture
def broken_evaluator(register_evaluator: Any) -> Any:
    @register_evaluator("test_boom")
    def boom(ctx: CheckContext, parameters: dict[str, Any]) -> bool:
        raise RuntimeError("evaluator bug")

    return boom


ERR = {"kind": "custom", "id": "e", "evaluator": "test_boom"}


def test_all_evaluates_every_child() -> None:
    spec = {
        "kind": "all",
        "assertions": [_c("equals", "no", id="a"), _c("equals", "x", id="b"), _c("exists", id="c")],
    }
    res = ev(spec, "x")
    assert res.status == "failed" and len(res.children) == 3
    assert [k.status for k in res.children] == ["failed", "passed", "passed"]
    assert res.message.startswith("1 of 3 failed: a: ")
    assert ev({"kind": "all", "assertions": [_c("exists"), _c("equals", "x")]}, "x").passed


def test_any_passes_when_one_child_passes() -> None:
    spec = {"kind": "any", "assertions": [_c("equals", "no"), _c("equals", "x")]}
    assert ev(spec, "x").passed
    spec = {"kind": "any", "assertions": [_c("equals", "no"), _c("equals", "nope")]}
    res = ev(spec, "x")
    assert not res.passed and res.message.startswith("none of 2 passed")


def test_not_inverts() -> None:
    assert ev({"kind": "not", "assertion": _c("equals", "no")}, "x").passed
    res = ev({"kind": "not", "assertion": _c("equals", "x")}, "x")
    assert not res.passed and "should not" in res.message


def test_errors_propagate_and_never_become_passes(broken_evaluator: Any) -> None:
    any_ = ev({"kind": "any", "assertions": [_c("exists"), ERR]}, "x")
    assert any_.status == "error" and len(any_.children) == 2
    assert any_.children[0].status == "passed"  # the other child still ran
    all_ = ev({"kind": "all", "assertions": [ERR, _c("exists")]}, "x")
    assert all_.status == "error" and "evaluator bug" in all_.message
    not_ = ev({"kind": "not", "assertion": ERR}, "x")
    assert not_.status == "error"
    negated = ev({**ERR, "negate": True}, "x")
    assert negated.status == "error"
    nested = ev({"kind": "not", "assertion": {"kind": "all", "assertions": [ERR]}}, "x")
    assert nested.status == "error"


# ---------------------------------------------------------------- custom evaluators


@pytest.fixture
def evaluators(register_evaluator: Any) -> None:
    reg = register_evaluator

    @reg("test_len_at_least")
    def len_at_least(ctx: CheckContext, parameters: dict[str, Any]) -> dict[str, Any]:
        n = len(ctx.observation.text or "")
        return {"passed": n >= parameters["n"], "evidence": {"length": n}}

    @reg("test_async_bool")
    async def async_bool(ctx: CheckContext, parameters: dict[str, Any]) -> bool:
        return bool(parameters.get("ok"))

    @reg("test_ctx_only")
    def ctx_only(ctx: CheckContext) -> bool:
        return len(ctx.history) == 1

    @reg("test_bad_result")
    def bad(ctx: CheckContext, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"passed": "yes"}

    @reg("test_returns_result")
    def returns_result(ctx: CheckContext, parameters: dict[str, Any]) -> AssertionResult:
        return AssertionResult(kind="x", status="failed", message="custom says no")


def test_custom_evaluator_results(evaluators: Any) -> None:
    res = ev({"kind": "custom", "evaluator": "test_len_at_least", "parameters": {"n": 3}}, "hello")
    assert res.passed and res.details["evidence"] == {"length": 5}
    assert res.expected == {"evaluator": "test_len_at_least", "parameters": {"n": 3}}
    res = ev({"kind": "custom", "evaluator": "test_async_bool", "parameters": {"ok": False}}, "x")
    assert res.status == "failed"
    turn = TurnResult(index=0, observation=Observation(text="a"))
    assert ev({"kind": "custom", "evaluator": "test_ctx_only"}, "x", history=[turn]).passed
    bad = ev({"kind": "custom", "evaluator": "test_bad_result"}, "x")
    assert bad.status == "error" and "'passed' must be a boolean" in bad.message
    mine = ev({"kind": "custom", "id": "k", "evaluator": "test_returns_result"}, "x")
    assert (mine.status, mine.kind, mine.id, mine.message) == (
        "failed",
        "custom",
        "k",
        "custom says no",
    )


def test_custom_evaluator_errors_are_distinct_from_failures(broken_evaluator: Any) -> None:
    res = ev(ERR, "x")
    assert res.status == "error"
    assert res.message == "evaluator 'test_boom' failed: RuntimeError: evaluator bug"
    assert "traceback" in res.details


def test_unknown_evaluator_at_evaluation_is_an_error_with_a_suggestion(evaluators: Any) -> None:
    res = ev({"kind": "custom", "evaluator": "test_len_at_lest"}, "x")
    assert res.status == "error" and "Did you mean 'test_len_at_least'" in res.message


# ---------------------------------------------------------------- scopes


def _turns_case(n: int) -> Case:
    return Case(id="s", mode="turns", turns=[Turn(input=TurnInput(text=str(i))) for i in range(n)])


def test_final_scope_runs_only_when_every_step_was_recorded() -> None:
    case = _turns_case(2)
    spec = _c("equals", "last")
    one = [TurnResult(index=0, observation=Observation(text="first"))]
    res = ev(spec, "last", case=case, scope="final", history=one)
    assert res.status == "skipped" and "1 of 2" in res.message
    both = [*one, TurnResult(index=1, observation=Observation(text="last"))]
    assert ev(spec, "last", case=case, scope="final", history=both).passed
    no_obs = [*one, TurnResult(index=1, observation=None, status="error")]
    assert ev(spec, "last", case=case, scope="final", history=no_obs).status == "skipped"


def test_step_scope_is_not_held_back_by_later_steps() -> None:
    res = ev(_c("equals", "x"), "x", case=_turns_case(3), scope="turn", history=[])
    assert res.passed
