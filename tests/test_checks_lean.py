"""The lean `evaluate` path gives the outcome of the plain one, field for field.

`evaluate` decides the common kinds from an outcome tuple and builds the one result without
pydantic's validation pass (convlab.checks._core `lean_kind`, `_make`). The plain path is
what evaluate did before: the kind registered in KINDS builds a validated AssertionResult,
then `negate` and the custom message are applied by copy. Every registered kind's examples
run both ways, as given, negated and with a custom message, and must agree on every field
but the duration (and a traceback's frames).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convlab.agents.protocol import as_agent
from convlab.checks import KINDS, CheckContext, _core, evaluate, unknown_evaluators
from convlab.model.assertions import PythonTest, Regex, parse_assertion
from convlab.model.conversation import Message, Observation, ToolCall
from convlab.model.results import AssertionResult
from convlab.model.suite import Case, Checkpoint, Suite, Turn, TurnInput

TEST_SOURCE = """\
def test_says_ok(x, judge):
    assert "ok" in x.response, "no ok"


def test_crashes(x, judge):
    return {}["missing"]
"""


def _python_test(function: str) -> PythonTest:
    line = TEST_SOURCE.splitlines().index(f"def {function}(x, judge):") + 1
    return PythonTest(function=function, code=TEST_SOURCE, file="/virtual/t.py", line=line)


OBSERVATIONS = [
    Observation(text="ok fine, order 4411 shipped"),
    Observation(text=""),
    Observation(text="error: something broke"),
    Observation(text='Here: ```json\n{"order": {"status": "shipped"}, "n": [1, 2]}\n```'),
    Observation(data={"a": 1, "b": [1, 2], "s": "ok"}),
    Observation(
        text="I searched.",
        tool_calls=[ToolCall("search", {"q": "x"}, result={"ok": True, "message": "found 3"})],
    ),
]

CONTAINS = {"kind": "contains", "value": "ok"}
REGEX = {"kind": "regex", "pattern": r"order \d+"}
CUSTOM = {"kind": "custom", "evaluator": "lean_test_says_ok", "parameters": {"w": "ok"}}

EXAMPLES: dict[str, list[Any]] = {
    "equals": [
        {"kind": "equals", "value": "ok fine, order 4411 shipped"},
        {"kind": "equals", "value": {"b": [1, 2], "a": 1.0, "s": "ok"}},
        {"kind": "equals", "value": 5},
    ],
    "contains": [CONTAINS, {"kind": "contains", "value": 1}, {"kind": "contains"}],
    "not_contains": [{"kind": "not_contains", "value": "error"}, {"kind": "not_contains"}],
    "regex": [REGEX, {"kind": "regex", "pattern": "(?i)ERROR"}, {"kind": "regex", "pattern": "^$"}],
    "type": [
        {"kind": "type", "value": "string"},
        {"kind": "type", "value": "object"},
        {"kind": "type", "value": "number", "path": "a"},
        {"kind": "type", "value": "object", "path": "order"},
    ],
    "json_path": [
        {"kind": "json_path", "path": "order.status", "value": "shipped"},
        {"kind": "json_path", "path": "$.a", "value": [1, 2, 3]},
        {"kind": "json_path", "path": "b[1]", "value": 2},
        {"kind": "json_path", "path": "n", "value": [2, 1]},
    ],
    "check": [
        {"kind": "check", "path": ["response", "text"], "operator": "contains", "value": "ok"},
        {"kind": "check", "path": ["response", "data", "a"], "operator": "equals", "value": 1},
        {"kind": "check", "path": ["response", "data"], "operator": "exists"},
        {"kind": "check", "path": ["response", "text"], "operator": "length", "value": 11},
        {"kind": "check", "path": ["response", "data", "b"], "operator": "gte", "value": 1},
    ],
    "tool_called": [
        {"kind": "tool_called", "value": "search"},
        {"kind": "tool_called", "value": ["lookup", "search"]},
        {"kind": "tool_called", "value": {"name": "search", "arguments": {"q": "y"}}},
    ],
    "tool_result": [
        {"kind": "tool_result", "tool": "search", "result": {"ok": True}},
        {"kind": "tool_result", "tool": "search", "result": "regex:found \\d"},
        {"kind": "tool_result", "tool": "nope"},
    ],
    "expected_tools": [
        {"kind": "expected_tools", "tools": [{"name": "search"}]},
        {"kind": "expected_tools", "tools": [{"name": "search", "args": {"q": {"value": "y"}}}]},
    ],
    "script": [
        {"kind": "script", "script": "convlab_lean_test_mod:has_ok", "value": 1},
        {"kind": "script", "script": "convlab_lean_test_mod:verdict"},
        {"kind": "script", "script": "convlab_lean_test_mod:crash"},
    ],
    "grader": [
        {"kind": "grader", "grader": "convlab_lean_test_mod:grade"},
        {"kind": "grader", "grader": "convlab_lean_test_mod:grade", "threshold": 0.9},
    ],
    "metric": [
        {"kind": "metric", "metric": "equality", "ground_truth": "ok fine, order 4411 shipped"},
        {"kind": "metric", "metric": "numeric", "ground_truth": "4411"},
        {"kind": "metric", "metric": "equality"},
    ],
    "judge": [
        {"kind": "judge", "question": "Is it polite?"},
        {"kind": "judge", "rubric": "Politeness", "threshold": 0.9},
    ],
    "agent": [
        {"kind": "agent", "use": "agents:validator", "value": "polite"},
        {"kind": "agent", "value": "polite"},
    ],
    "python_test": [_python_test("test_says_ok"), _python_test("test_crashes")],
    "custom": [CUSTOM, {"kind": "custom", "evaluator": "lean_test_nobody"}],
    "all": [{"kind": "all", "assertions": [CONTAINS, REGEX, CUSTOM]}],
    "any": [{"kind": "any", "assertions": [{"kind": "equals", "value": 0}, REGEX]}],
    "not": [
        {"kind": "not", "assertion": CONTAINS},
        {"kind": "not", "assertion": {"kind": "custom", "evaluator": "lean_test_nobody"}},
    ],
}


def _judge(messages: list[dict[str, Any]]) -> str:
    return '{"answer": "yes", "score": 0.75, "passed": true, "reason": "fine"}'


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch, register_evaluator: Any) -> None:
    """The module the script and grader examples import, and the custom evaluator."""
    mod = types.ModuleType("convlab_lean_test_mod")

    def has_ok(output: Any, input: Any, expected: Any) -> bool:
        return "ok" in str(output)

    def verdict(output: Any, input: Any, expected: Any) -> dict[str, Any]:
        return {"pass": False, "message": "no verdict", "seen": output}

    def crash(output: Any, input: Any, expected: Any) -> bool:
        raise RuntimeError("script bug")

    def grade(ctx: Any) -> float:
        return 0.8

    for fn in (has_ok, verdict, crash, grade):
        setattr(mod, fn.__name__, fn)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)

    @register_evaluator("lean_test_says_ok")
    def says_ok(ctx: CheckContext, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"passed": parameters["w"] in ctx.observation.text, "evidence": {"n": 1}}


@contextlib.contextmanager
def plain_path() -> Iterator[None]:
    """evaluate as it was: every kind through KINDS, every result validated by pydantic."""
    with contextlib.ExitStack() as stack:
        for name in KINDS.names():
            builtin = KINDS.get(name)

            def plain(spec: Any, ctx: CheckContext, builtin: Any = builtin) -> Any:
                return builtin(spec, ctx)

            stack.enter_context(KINDS.registered(name, plain))
        stack.enter_context(
            contextlib.nullcontext(setattr(_core, "_make", lambda **kw: AssertionResult(**kw)))
        )
        stack.callback(setattr, _core, "_make", _core._make)
        yield


def _fields(res: AssertionResult) -> dict[str, Any]:
    """Every field but the duration, children too; a traceback only as present or not."""
    assert type(res) is AssertionResult
    data = {name: getattr(res, name) for name in type(res).model_fields if name != "duration_ms"}
    data["children"] = [_fields(child) for child in res.children]
    data["details"] = {
        k: (v if k != "traceback" else "<traceback>") for k, v in res.details.items()
    }
    data["fields_set"] = res.model_fields_set - {"duration_ms"}
    return data


def _contexts() -> list[CheckContext]:
    case = Case(id="c", input=[Message(content="say ok")])
    return [
        CheckContext(
            observation=obs,
            messages=[Message(content="say ok"), Message(role="assistant", content=obs.text)],
            case=case,
            judge=as_agent(_judge),
            judges={"agents:validator": as_agent(_judge)},
        )
        for obs in OBSERVATIONS
    ]


def _both(spec: Any, ctx: CheckContext) -> tuple[AssertionResult, AssertionResult]:
    lean = asyncio.run(evaluate(spec, ctx))
    with plain_path():
        plain = asyncio.run(evaluate(spec, ctx))
    return lean, plain


def _variants(example: Any) -> list[Any]:
    if isinstance(example, dict):
        return [
            parse_assertion(example),
            parse_assertion({**example, "negate": True}),
            parse_assertion({**example, "message": "custom failure message"}),
        ]
    return [example, example.model_copy(update={"negate": True})]


def test_every_kind_has_examples() -> None:
    assert sorted(EXAMPLES) == KINDS.names()


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_lean_and_plain_outcomes_are_equal(kind: str, helpers: None) -> None:
    statuses = set()
    for example in EXAMPLES[kind]:
        for spec in _variants(example):
            for ctx in _contexts():
                lean, plain = _both(spec, ctx)
                assert _fields(lean) == _fields(plain), (spec, ctx.observation)
                statuses.add(lean.status)
    assert statuses & {"passed", "failed"}, f"the {kind} examples decide nothing"


def test_the_common_kinds_take_the_lean_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """No result is built twice: the lean kinds never reach result() and its validation."""
    built: list[dict[str, Any]] = []
    make = _core._make
    monkeypatch.setattr(_core, "_make", lambda **kw: built.append(kw) or make(**kw))
    reply = '{"order": {"status": "shipped"}}'
    calls = [ToolCall("search", {"q": "x"}, result={"ok": True})]
    ctx = CheckContext(observation=Observation(text=reply, tool_calls=calls))
    lean = ["equals", "contains", "not_contains", "regex", "type", "json_path", "check"]
    for kind in [*lean, "tool_called", "tool_result"]:
        spec = parse_assertion(EXAMPLES[kind][0])
        assert asyncio.run(evaluate(spec, ctx)).status in ("passed", "failed")
    assert built == []
    asyncio.run(evaluate(parse_assertion(EXAMPLES["expected_tools"][0]), ctx))
    assert len(built) == 1


def test_children_that_wait_still_run_concurrently(register_evaluator: Any) -> None:
    """`all` runs sync children in turn, but two evaluators waiting on each other both run."""
    events: dict[str, asyncio.Event] = {}

    async def meet(me: str, other: str) -> bool:
        events.setdefault(me, asyncio.Event()).set()
        await events.setdefault(other, asyncio.Event()).wait()
        return True

    @register_evaluator("lean_test_a")
    async def a(ctx: CheckContext, parameters: dict[str, Any]) -> bool:
        return await meet("a", "b")

    @register_evaluator("lean_test_b")
    async def b(ctx: CheckContext, parameters: dict[str, Any]) -> bool:
        return await meet("b", "a")

    kids = [CONTAINS, {"kind": "custom", "evaluator": "lean_test_a"}]
    kids += [{"kind": "not", "assertion": {"kind": "custom", "evaluator": "lean_test_b"}}]
    spec = parse_assertion({"kind": "all", "assertions": kids})
    ctx = CheckContext(observation=Observation(text="ok"))
    res = asyncio.run(asyncio.wait_for(evaluate(spec, ctx), timeout=10))
    assert [k.status for k in res.children] == ["passed", "passed", "failed"]
    assert res.status == "failed"


def test_a_kind_registered_over_a_lean_one_is_the_one_evaluated() -> None:
    def shout(spec: Any, ctx: CheckContext) -> AssertionResult:
        return AssertionResult(kind=spec.kind, status="failed", message="overridden")

    ctx = CheckContext(observation=Observation(text="ok"))
    with KINDS.registered("contains", shout):
        res = asyncio.run(evaluate(parse_assertion(CONTAINS), ctx))
    assert (res.status, res.message) == ("failed", "overridden")
    assert asyncio.run(evaluate(parse_assertion(CONTAINS), ctx)).passed


def test_results_built_without_validation_are_valid_models() -> None:
    ctx = CheckContext(observation=Observation(data={"a": 1, "b": [1, 2], "s": "ok"}))
    for kind in ("contains", "check", "tool_called", "all"):
        res = asyncio.run(evaluate(parse_assertion(EXAMPLES[kind][0]), ctx))
        again = AssertionResult.model_validate(res.model_dump())
        assert again == res and again.model_dump_json() == res.model_dump_json()


def test_an_invalid_value_still_goes_through_validation() -> None:
    spec = parse_assertion(CONTAINS)
    assert _core.result(spec, True, "m", score=1).score == 1.0  # coerced, as pydantic does
    with pytest.raises(ValueError, match="details"):
        _core.result(spec, True, "m", details="not a dict")
    with pytest.raises(ValueError, match="status"):
        _core._make(kind="k", id=None, label=None, status="maybe", message="")


TEXT = st.text(alphabet=st.sampled_from('ok error 41{}"é.\n*'), max_size=30)
PATTERN = st.text(alphabet=st.sampled_from("ok\\d+*?()[]^$.|{}1(?i)"), max_size=12)


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError):
        return False
    return True


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
@settings(max_examples=150, deadline=None)
@given(text=TEXT, needle=TEXT, pattern=PATTERN, negate=st.booleans())
def test_random_texts_needles_and_regexes(
    text: str, needle: str, pattern: str, negate: bool
) -> None:
    ctx = CheckContext(observation=Observation(text=text))
    common = {"negate": negate}
    specs: list[Any] = [
        parse_assertion({"kind": "contains", "value": needle, **common}),
        parse_assertion({"kind": "not_contains", "value": needle, **common}),
        parse_assertion({"kind": "equals", "value": needle, **common}),
    ]
    if _compiles(pattern):
        specs.append(parse_assertion({"kind": "regex", "pattern": pattern, **common}))
    else:  # a bad regex that got past loading (built without validation) is an error
        specs.append(Regex.model_construct(pattern=pattern, negate=negate))
    for spec in specs:
        lean, plain = _both(spec, ctx)
        assert _fields(lean) == _fields(plain)
        found = {
            "contains": needle in text,
            "not_contains": needle not in text,
            "equals": bool(text) and needle == text,  # no text: the output is null
        }.get(spec.kind)
        if spec.kind == "regex":
            if not _compiles(pattern):
                assert lean.status == "error" and lean.blame == "suite"
                continue
            found = re.search(pattern, text) is not None
        assert lean.passed is (found != negate)


def _suite_with(where: str) -> Suite:
    unknown = parse_assertion({"kind": "custom", "evaluator": "lean_test_nobody"})
    nested = parse_assertion(
        {
            "kind": "all",
            "assertions": [CONTAINS, {"kind": "not", "assertion": unknown.model_dump()}],
        }
    )
    plain = Case(id="p", input=[Message(content="hi")], assertions=[parse_assertion(CONTAINS)])
    cases = [plain] * 3
    if where == "turn":
        turn = Turn(input=TurnInput(text="hi"), assertions=[nested])
        cases.append(Case(id="t", mode="turns", turns=[turn]))
    elif where == "checkpoint":
        cp = Checkpoint(id="cp", assertion=unknown)
        cases.append(Case(id="d", mode="dynamic", input=[Message(content="hi")], checkpoints=[cp]))
    elif where == "case":
        cases.append(Case(id="c", input=[Message(content="hi")], assertions=[nested]))
    return Suite(id="s", cases=cases, assertions=[unknown] if where == "suite" else [])


@pytest.mark.parametrize(
    ("where", "path"),
    [
        ("none", None),
        ("suite", "assertions[0].evaluator"),
        ("case", "assertions[0].assertions[1].assertion.evaluator"),
        ("turn", "turns[0].assertions[0].assertions[1].assertion.evaluator"),
        ("checkpoint", "checkpoints[0].assertion.evaluator"),
    ],
)
def test_the_quick_scan_finds_an_unknown_evaluator_anywhere(where: str, path: str | None) -> None:
    problems = unknown_evaluators(_suite_with(where))
    assert [p.path for p in problems] == ([path] if path else [])
