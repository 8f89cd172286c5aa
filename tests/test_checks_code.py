"""Code checks: thinkingbox Python tests (§4.4-4.5) and HoloDeck code graders (§2.5)."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from convlab.agents.protocol import as_agent
from convlab.checks import CheckContext, GraderContext, GraderResult, TestContext, evaluate
from convlab.checks.code import build_test_context
from convlab.model.assertions import Grader, PythonTest
from convlab.model.conversation import Message, ToolCall
from convlab.model.records import AssertionResult, Observation, TurnResult
from convlab.model.suite import Case, Turn, TurnInput

# ---------------------------------------------------------------- Python tests

SOURCE = '''\
from thinkingbox.common import Judge, TestContext

"""!
scenario: cloud_drive
"""


def check_file(x, path, text):
    for f in x.effects["cloud_drive"]["files"]:
        if f["path"] == path:
            assert f["text_content"] == text, f"content of {path}: {f['text_content']!r}"
            return
    assert False, f"file not found: {path}"


def test_passes(x: TestContext, judge: Judge):
    """!
    query: hi
    """
    print("checking", x.query())
    check_file(x, "a.txt", "hello")


def test_fails(x, judge):
    check_file(x, "a.txt", "bye")


def test_bare_assert(x, judge):
    assert len(x.tool_calls) == 5


def test_errors(x, judge):
    return {}["missing"]


def test_reward(x, judge):
    x.metadata["calls"] = len(x.tool_calls)
    return 0.25


def test_zero_reward(x, judge):
    return 0


def test_judged(x, judge):
    assert judge.text_yesno(x.response, "Does it confirm?"), "judge said no"


def test_x_only(x):
    assert x.tool_calls[0].tool_call.name == "write_file"
    assert x.tool_calls[0]["arguments"] == {"path": "a.txt"}
    assert "user: write it" in x.transcript()


def test_returns_text(x, judge):
    return "done"
'''


def line_of(text: str) -> int:
    """1-based number of the first SOURCE line that contains `text`."""
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def pytest_spec(
    function: str, file: str = "/virtual/cloud_drive.py", code: str = SOURCE
) -> PythonTest:
    line = next(i for i, s in enumerate(code.splitlines(), 1) if s.startswith(f"def {function}("))
    return PythonTest(function=function, code=code, file=file, line=line)


def conversation() -> dict[str, Any]:
    obs = Observation(
        text="I wrote the file.",
        tool_calls=[ToolCall("write_file", {"path": "a.txt"}, result={"ok": True})],
        effects={"cloud_drive": {"files": [{"path": "a.txt", "text_content": "hello"}]}},
    )
    messages = [
        Message(role="user", content="write it"),
        Message(role="assistant", content="I wrote the file."),
    ]
    return {
        "observation": obs,
        "messages": messages,
        "history": [TurnResult(index=0, observation=obs)],
    }


def run_test(function: str, judge: Any = None, **kw: Any) -> AssertionResult:
    ctx = CheckContext(**conversation(), judge=judge, scope="final")
    return asyncio.run(evaluate(pytest_spec(function, **kw), ctx))


def test_returning_normally_passes_with_reward_one_and_captures_prints() -> None:
    res = run_test("test_passes")
    assert res.status == "passed" and res.score == 1.0
    assert res.details["prints"] == "checking write it\n"


def test_assertion_error_fails_with_its_message_and_line() -> None:
    res = run_test("test_fails")
    assert res.status == "failed" and res.score == 0.0
    assert res.message == "content of a.txt: 'hello'"
    assert res.details["lineno"] == line_of('assert f["text_content"]')  # inside the helper
    assert res.details["line_content"].startswith('assert f["text_content"] == text')
    line = line_of('assert f["text_content"]')
    assert res.details["location"] == f"/virtual/cloud_drive.py:{line}"
    assert f'File "/virtual/cloud_drive.py", line {line}' in res.details["traceback"]
    assert "assert f[" in res.details["traceback"]  # source lines shown for in-memory code


def test_bare_assert_message_names_the_line() -> None:
    res = run_test("test_bare_assert")
    assert (
        res.status == "failed" and res.message == "assertion failed: assert len(x.tool_calls) == 5"
    )


def test_other_exceptions_are_errors_with_traceback() -> None:
    res = run_test("test_errors")
    assert res.status == "error" and res.score == 0.0
    assert res.message == "KeyError: 'missing'" and res.error == res.message
    assert (
        res.details["lineno"] == line_of('return {}["missing"]')
        and "KeyError" in res.details["traceback"]
    )
    assert "convlab/checks" not in res.details["traceback"]  # starts at the test's own frames


def test_returned_number_is_the_reward_and_metadata_is_kept() -> None:
    res = run_test("test_reward")
    assert res.status == "passed" and res.score == 0.25
    assert res.details["metadata"] == {"calls": 1}
    zero = run_test("test_zero_reward")
    assert zero.status == "passed" and zero.score == 0.0  # reward 0 still passes


def test_non_number_return_is_an_error_as_in_tb_infer() -> None:
    # thinkingbox/common/testrunner.py TestScriptSubprocess: TestResult.reward must be a float
    res = run_test("test_returns_text")
    assert res.status == "error" and res.details["returned"] == "'done'"
    assert "a reward must be a number from 0 to 1" in res.message


def test_functions_taking_only_x_and_thinkingbox_style_tool_calls() -> None:
    assert run_test("test_x_only").passed


def test_judge_from_a_worker_thread() -> None:
    asked: list[str] = []

    def judge(messages: list[dict[str, Any]]) -> str:
        asked.append(messages[-1]["content"])
        return '{"answer": "yes", "reason": "confirms the write"}'

    res = run_test("test_judged", judge=as_agent(judge))
    assert res.passed, res
    assert "I wrote the file." in asked[0] and "Does it confirm?" in asked[0]
    [decision] = res.details["judge_motivation"]
    assert decision["answer"] is True and decision["motivation"] == "confirms the write"
    no = run_test("test_judged", judge=as_agent(lambda m: "No"))
    assert no.status == "failed" and no.message == "judge said no"


def test_judge_missing_makes_the_test_an_error_that_says_how() -> None:
    res = run_test("test_judged")
    assert res.status == "error" and "JudgeNotConfiguredError" in res.message
    assert "run(..., judge=...)" in res.message


def test_module_level_errors_are_errors() -> None:
    code = "import no_such_module_qq\n\ndef test_t(x, judge):\n    pass\n"
    res = run_test("test_t", code=code)
    assert res.status == "error" and "ModuleNotFoundError" in res.message
    assert res.details["lineno"] == 1


def test_traceback_uses_the_real_file(tmp_path: Path) -> None:
    file = tmp_path / "t.py"
    code = "def test_t(x, judge):\n    assert 1 == 2, 'nope'\n"
    file.write_text(code)
    res = run_test("test_t", file=str(file), code=code)
    assert res.message == "nope" and f'File "{file}", line 2' in res.details["traceback"]


def test_prints_are_captured_per_test_not_globally(capsys: pytest.CaptureFixture[str]) -> None:
    code = "def test_t(x, judge):\n    print('a', 1, sep='-')\n    print('b', end='')\n"
    res = run_test("test_t", code=code)
    assert res.details["prints"] == "a-1\nb"
    assert capsys.readouterr().out == ""


def test_build_test_context_from_a_conversation() -> None:
    obs1 = Observation(text="first", tool_calls=[ToolCall("a", {"x": 1})])
    obs2 = Observation(text="second", tool_calls=[ToolCall("b", result=2)])
    ctx = CheckContext(
        observation=obs2,
        messages=[
            Message(role="user", content="q1"),
            Message(role="assistant", content="first"),
            Message(role="user", content="q2"),
            Message(role="assistant", content="second"),
        ],
        history=[TurnResult(index=0, observation=obs1), TurnResult(index=1, observation=obs2)],
        world={"drive": {"files": []}},
    )
    x = build_test_context(ctx)
    assert isinstance(x, TestContext)
    assert x.response == "second" and x.query() == "q1"
    assert [c["name"] for c in x.tool_calls] == ["a", "b"]
    assert x.tool_calls[1].response == 2
    assert x.effects == {"drive": {"files": []}}
    assert x.transcript().splitlines()[0] == "user: q1"


def test_a_given_x_is_used_as_is() -> None:
    code = "def test_t(x, judge):\n    assert x.response == 'given'\n"
    ctx = CheckContext(extra={"x": TestContext(response="given")}, scope="final")
    res = asyncio.run(evaluate(pytest_spec("test_t", code=code), ctx))
    assert res.passed


# ---------------------------------------------------------------- graders


@pytest.fixture
def graders(monkeypatch: pytest.MonkeyPatch) -> list[GraderContext]:
    seen: list[GraderContext] = []
    mod = types.ModuleType("convlab_test_graders")

    def exact(ctx: GraderContext) -> bool:
        seen.append(ctx)
        return ctx.agent_response.strip() == ctx.ground_truth

    def half(ctx: GraderContext) -> float:
        return 0.5

    def structured(ctx: GraderContext) -> GraderResult:
        return GraderResult(score=0.2, passed=True, reason="close enough", details={"k": 1})

    def odd(ctx: GraderContext) -> str:
        return "great"

    def boom(ctx: GraderContext) -> bool:
        raise ValueError("grader bug")

    def leaky(ctx: GraderContext) -> GraderResult:
        return GraderResult(score=1.0, details={"obj": object()})

    async def later(ctx: GraderContext) -> float:
        return 0.9

    for fn in (exact, half, structured, odd, boom, leaky, later):
        setattr(mod, fn.__name__, fn)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return seen


def grade(name: str, reply: str = "25587", **spec: Any) -> AssertionResult:
    case = Case(
        id="c",
        name="convfinqa-0",
        mode="turns",
        turns=[
            Turn(input=TurnInput(text="q0")),
            Turn(
                input=TurnInput(text="what is the difference?"),
                ground_truth="25587",
                retrieval_context=["doc"],
                config={"turn_program": "subtract(206588, 181001)"},
            ),
        ],
    )
    obs = Observation(
        text=reply, tool_calls=[ToolCall("subtract", '{"a": 206588, "b": 181001}', result=25587)]
    )
    ctx = CheckContext(observation=obs, case=case, turn_index=1, input=case.turns[1].input)
    return asyncio.run(evaluate(Grader(grader=f"convlab_test_graders:{name}", **spec), ctx))


def test_grader_context_fields(graders: list[GraderContext]) -> None:
    res = grade("exact")
    assert res.passed and res.score == 1.0
    [ctx] = graders
    assert ctx.turn_input == "what is the difference?" and ctx.agent_response == "25587"
    assert ctx.ground_truth == "25587" and ctx.retrieval_context == ("doc",)
    assert ctx.turn_index == 1 and ctx.test_case_name == "convfinqa-0"
    assert ctx.turn_config == {"turn_program": "subtract(206588, 181001)"}
    [call] = ctx.tool_invocations
    assert (call.name, call.args, call.result) == ("subtract", {"a": 206588, "b": 181001}, 25587)
    with pytest.raises(AttributeError):
        ctx.turn_index = 3  # type: ignore[misc]  # frozen


def test_grader_sees_non_object_arguments_as_raw(graders: list[GraderContext]) -> None:
    """HoloDeck 0.7.1 `_parse_tool_arguments`: text that is not a JSON object is {"raw": text}."""
    case = Case(id="c", mode="turns", turns=[Turn(input=TurnInput(text="q"), ground_truth="x")])
    obs = Observation(text="x", tool_calls=[ToolCall("search", "plain words")])
    ctx = CheckContext(observation=obs, case=case, turn_index=0, input=case.turns[0].input)
    asyncio.run(evaluate(Grader(grader="convlab_test_graders:exact"), ctx))
    [seen] = graders
    assert seen.tool_invocations[0].args == {"raw": "plain words"}


def test_grader_return_rules(graders: list[GraderContext]) -> None:
    assert not grade("exact", reply="1").passed
    assert grade("half").passed  # 0.5 >= default 0.5
    assert not grade("half", threshold=0.6).passed
    res = grade("structured")
    assert res.passed and res.score == 0.2 and res.message == "close enough"
    assert res.details["grader_details"] == {"k": 1}
    assert grade("later").score == 0.9


def test_grader_problems_are_errors(graders: list[GraderContext]) -> None:
    odd = grade("odd")
    assert odd.status == "error"
    assert (
        odd.message == "grader returned unsupported type str; expected bool, float, or GraderResult"
    )
    boom = grade("boom", fail_on_error=True)
    assert boom.status == "error" and boom.message == "ValueError: grader bug"
    assert boom.details["fail_on_error"] is True
    leaky = grade("leaky")
    assert leaky.status == "error" and "not JSON-serializable" in leaky.message
    missing = grade("nope")
    assert missing.status == "error" and "cannot import grader" in missing.message


def test_grader_model_rejects_a_bad_reference() -> None:
    with pytest.raises(ValueError, match=r"pkg\.module:callable"):
        Grader(grader="not a reference")


def test_grader_types_are_exported_for_users() -> None:
    import convlab.checks as checks

    assert checks.GraderContext is GraderContext and checks.GraderResult is GraderResult
    assert GraderResult(0.5).passed is None
    assert textwrap.dedent(GraderContext.__doc__ or "")


def test_details_stay_storable_whatever_the_test_keeps() -> None:
    code = "def test_t(x, judge):\n    x.metadata['obj'] = object()\n    x.metadata['n'] = 1\n"
    res = run_test("test_t", code=code)
    assert res.passed and res.details["metadata"]["n"] == 1
    assert res.details["metadata"]["obj"].startswith("<object object")
    res.to_json()  # a run is saved as JSON


# ---------------------------------------------------------------- in a run


def python_test_case(case_id: str, code: str, world: dict[str, Any] | None = None) -> Case:
    spec = {"kind": "python_test", "function": "test_t", "code": code, "file": f"{case_id}.py"}
    return Case(
        id=case_id,
        input=[Message(role="user", content="add a file")],
        world=world or {},
        assertions=[{**spec, "line": 1}],
    )


def adds_a_file(messages: list[dict[str, Any]], ctx: Any) -> str:
    ctx.world["drive"]["files"].append("a.txt")
    return "added"


def test_init_result_is_the_world_before_the_conversation() -> None:
    import convlab as cl

    code = (
        "def test_t(x, judge):\n"
        "    assert x.init_result == {'drive': {'files': []}}, x.init_result\n"
        "    assert x.effects == {'drive': {'files': ['a.txt']}}, x.effects\n"
    )
    case = python_test_case("c", code, {"drive": {"files": []}})
    run = cl.run(cl.Suite(id="s", cases=[case]), adds_a_file, progress=False)
    [row] = run.df.to_dict("records")
    assert row["status"] == "passed", row["error"]


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("import sys\n\ndef test_t(x, judge):\n    sys.exit(1)\n", "SystemExit: 1"),
        ("import pytest\n\ndef test_t(x, judge):\n    pytest.fail('nope')\n", "Failed: nope"),
    ],
)
def test_a_test_that_exits_is_its_own_error_not_the_runs(code: str, error: str) -> None:
    import convlab as cl

    ok = "def test_t(x, judge):\n    assert x.response == 'added'\n"
    world = {"drive": {"files": []}}
    cases = [python_test_case("exits", code, world), python_test_case("fine", ok, world)]
    run = cl.run(cl.Suite(id="s", cases=cases), adds_a_file, progress=False)
    rows = {r["case_id"]: r for r in run.df.to_dict("records")}
    assert rows["fine"]["status"] == "passed"
    assert rows["exits"]["status"] == "error"
    assert rows["exits"]["error"] == f"python_test: {error}"
    [exits] = [r for r in run.results if r.case_id == "exits"]
    [res] = exits.turns[-1].assertions
    assert res.status == "error" and res.message == error
    assert res.details["location"] == "exits.py:4"
