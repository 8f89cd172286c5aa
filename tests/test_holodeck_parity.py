"""convlab against HoloDeck 0.7.1 (holodeck-ai on PyPI), decision by decision (docs/holodeck.md).

Expected values come from HoloDeck 0.7.1's released source, named at each test, and were
checked by running that source in a separate venv (see docs/holodeck.md, "Measuring").
Where convlab deliberately differs, the test says so and asserts convlab's behaviour.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.checks.toolargs import match_fuzzy
from convlab.checks.tools import holodeck_arguments
from convlab.errors import SuiteError
from convlab.model.records import CaseResult


def write(folder: Path, text: str, name: str = "agent.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def run_one(path: Path, agent: Any, **kw: Any) -> CaseResult:
    run = cl.run(cl.load(path), agent, progress=False, retries=0, **kw)
    (only,) = run.results
    assert isinstance(only, CaseResult)
    return only


def grader_module(folder: Path, body: str) -> str:
    """A grader module beside the agent.yaml, under a name no other test uses."""
    name = f"grader_{uuid.uuid4().hex[:10]}"
    (folder / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    return name


# ------------------------------------------------------------------ fuzzy matching
# holodeck/lib/test_runner/tool_arg_matcher.py, `match_fuzzy` and `_normalize`:
# strip, lower(), delete `[,_\u202f]`, collapse `\s+` to " ", numeric when both parse.


@pytest.mark.parametrize(
    ("pattern", "actual", "holodeck"),
    [
        ("Hello World", "helloworld", False),  # the ASCII space is not a separator
        ("hello world", "hello\tworld", True),  # whitespace runs collapse to one space
        ("New_York", "new york", False),  # "_" is deleted, the space is not
        ("a\u00a0b", "a b", True),  # NBSP is whitespace: collapsed
        ("206588", "206\u202f588", True),  # U+202F is a separator: deleted
        ("a\u202fb", "ab", True),
        ("ab", "a_b", True),
        ("ab", "a b", False),
        ("new york", "New  York", True),
        ("206588", "206 588", True),  # numeric: interior spaces dropped before float()
        ("206588", "206,588", True),
        ("1 000", 1000, True),
        ("50 %", 0.5, True),
        ("14.14%", 0.1414, True),
        ("none", None, True),
        ("yes", True, False),
    ],
)
def test_fuzzy_as_holodeck_match_fuzzy(pattern: str, actual: Any, holodeck: bool) -> None:
    assert match_fuzzy(pattern, actual) is holodeck


def test_fuzzy_arg_in_a_yaml_case_fails_where_holodeck_fails(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        test_cases:
          - name: city
            turns:
              - input: weather?
                expected_tools:
                  - name: weather
                    args: {city: {fuzzy: "New_York"}}
        """,
    )

    def agent(messages: list[dict[str, Any]], ctx: Any) -> cl.Reply:
        return cl.Reply(text="sunny", tool_calls=[cl.ToolCall("weather", {"city": "new york"})])

    result = run_one(path, agent)
    assert result.status == "failed"
    assert "arg 'city' mismatch" in (result.turns[0].assertions[0].message or "")


# ------------------------------------------------------------- non-object arguments
# holodeck/lib/backends/openai_agents_backend.py `_parse_tool_arguments`.


@pytest.mark.parametrize(
    ("arguments", "holodeck"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", {"raw": "[1, 2]"}),
        ("not json", {"raw": "not json"}),
        ("5", {"raw": "5"}),
        (None, {}),
    ],
)
def test_tool_arguments_read_as_holodeck(arguments: Any, holodeck: dict[str, Any]) -> None:
    assert holodeck_arguments(arguments) == holodeck


def test_raw_arguments_can_be_asserted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        test_cases:
          - name: raw
            input: search
            expected_tools:
              - name: search
                args: {raw: {regex: "cheap.*"}}
        """,
    )

    def agent(messages: list[dict[str, Any]], ctx: Any) -> cl.Reply:
        return cl.Reply(text="ok", tool_calls=[cl.ToolCall("search", "cheap flights")])

    assert run_one(path, agent).status == "passed"


# ------------------------------------------------------- an agent error on one turn
# holodeck/lib/test_runner/executor.py `_run_multi_turn`: the error is recorded on its
# turn, later turns still run and are scored; the case does not pass.

THREE_TURNS = """
test_cases:
  - name: conv
    turns:
      - input: one
        ground_truth: "1"
        evaluations: [{metric: equality}]
      - input: two
      - input: three
        ground_truth: "3"
        evaluations: [{metric: equality}]
"""


def failing_on_two(messages: list[dict[str, Any]], ctx: Any) -> str:
    text = messages[-1]["content"]
    if text == "two":
        raise RuntimeError("backend down")
    return {"one": "1", "three": "3"}[text]


def test_holodeck_case_runs_the_turns_after_an_agent_error(tmp_path: Path) -> None:
    result = run_one(write(tmp_path, THREE_TURNS), failing_on_two)
    assert [t.status for t in result.turns] == ["passed", "error", "passed"]
    assert result.status == "error"
    assert "turn 2" in (result.error or "") and "backend down" in (result.error or "")
    assert result.turns[2].assertions[0].passed


def test_other_formats_still_stop_at_an_agent_error(tmp_path: Path) -> None:
    # intention-kernel (JSON evaluation suite): a step error ends the case
    suite = tmp_path / "suite.json"
    steps = [{"id": t, "input": {"text": t}} for t in ("one", "two", "three")]
    scenario = {"id": "c", "name": "c", "writePolicy": "read_only", "steps": steps}
    doc = {"schemaVersion": 1, "id": "s", "name": "S", "scenarios": [scenario]}
    suite.write_text(json.dumps(doc), encoding="utf-8")
    run = cl.run(cl.load(suite), failing_on_two, progress=False, retries=0)
    (result,) = run.results
    assert result.status == "error" and len(result.turns) == 2


def test_fail_on_error_grader_stops_the_later_turns(tmp_path: Path) -> None:
    module = grader_module(
        tmp_path,
        """
        def boom(ctx):
            raise ValueError("grader broke")
        """,
    )
    path = write(
        tmp_path,
        f"""
        test_cases:
          - name: conv
            turns:
              - input: one
                evaluations: [{{type: code, grader: "{module}:boom", fail_on_error: true}}]
              - input: three
        """,
    )
    result = run_one(path, lambda m, c: {"one": "1", "three": "3"}[m[-1]["content"]])
    assert result.status == "error" and len(result.turns) == 1


# ------------------------------------------------------------------ ${VAR}
# holodeck/config/env_loader.py `substitute_env_vars` over the raw text (config/loader.py
# `_read_yaml_with_env_substitution`), before YAML parsing; unset -> ConfigError.


def test_env_var_in_tool_args_is_substituted_and_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVLAB_T_AMOUNT", "206588")
    path = write(
        tmp_path,
        """
        test_cases:
          - name: sub
            input: subtract
            expected_tools:
              - name: subtract
                args: {a: ${CONVLAB_T_AMOUNT}}
        """,
    )

    def agent(messages: list[dict[str, Any]], ctx: Any) -> cl.Reply:
        return cl.Reply(text="done", tool_calls=[cl.ToolCall("subtract", {"a": 206588.0})])

    # the value is parsed as YAML: the number 206588, which equals 206588.0 literally
    assert run_one(path, agent).status == "passed"


def test_unset_env_var_names_file_line_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONVLAB_T_MISSING", raising=False)
    write(
        tmp_path,
        """
        - name: p
          input: hi
          expected_tools:
            - name: lookup
              args: {key: "${CONVLAB_T_MISSING}"}
        """,
        "cases.yaml",
    )
    agent_yaml = write(tmp_path, "name: a\ntest_cases_file: cases.yaml\n")
    with pytest.raises(SuiteError) as err:
        cl.load(agent_yaml)
    (problem,) = err.value.problems
    assert problem.file.endswith("cases.yaml") and problem.line == 5
    assert problem.path == "test_cases[0].expected_tools[0].args.key"
    assert "CONVLAB_T_MISSING" in problem.message


# --------------------------------------------------------------- metric options
# holodeck/models/evaluation.py validates retry_on_failure, timeout_ms, scale; the
# executor (`_create_evaluators`) never reads them. strict_mode goes to deepeval's GEval.


def test_scale_is_rejected_with_a_reason(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        test_cases:
          - input: hi
            evaluations: [{metric: relevance, scale: 5}]
        """,
    )
    with pytest.raises(SuiteError) as err:
        cl.load(path)
    (problem,) = err.value.problems
    assert problem.path == "test_cases[0].evaluations[0].scale" and problem.line == 3
    assert "0 to 1" in problem.message


def judged_case(tmp_path: Path, entry: str) -> Path:
    return write(
        tmp_path,
        f"""
        test_cases:
          - input: hi
            evaluations: [{entry}]
        """,
    )


def test_timeout_ms_bounds_the_judge(tmp_path: Path) -> None:
    async def slow_judge(messages: list[dict[str, Any]], ctx: Any) -> str:
        await asyncio.sleep(5)
        return "1"

    path = judged_case(tmp_path, "{metric: relevance, timeout_ms: 50}")
    result = run_one(path, lambda m, c: "hello", judge=slow_judge)
    assert result.status == "error" and "timed out after 50 ms" in (result.error or "")


def test_retry_on_failure_asks_the_judge_again(tmp_path: Path) -> None:
    answers = iter(["no idea", "still no idea", '{"score": 0.9}'])
    path = judged_case(tmp_path, "{metric: relevance, retry_on_failure: 2}")
    result = run_one(path, lambda m, c: "hello", judge=lambda m, c: next(answers))
    assert result.status == "passed"
    without = judged_case(tmp_path, "{metric: relevance}")
    again = iter(["no idea", '{"score": 0.9}'])
    assert run_one(without, lambda m, c: "hello", judge=lambda m, c: next(again)).status == (
        "error"
    )


def test_geval_strict_mode_is_all_or_nothing(tmp_path: Path) -> None:
    entry = "{type: geval, name: Polite, criteria: polite, threshold: 0.5, strict_mode: %s}"
    strict = judged_case(tmp_path, entry % "true")
    assert run_one(strict, lambda m, c: "hi", judge=lambda m, c: "0.9").status == "failed"
    assert run_one(strict, lambda m, c: "hi", judge=lambda m, c: "1").status == "passed"
    lenient = judged_case(tmp_path, entry % "false")
    assert run_one(lenient, lambda m, c: "hi", judge=lambda m, c: "0.9").status == "passed"


# ------------------------------------------------------- deliberate differences


def test_empty_single_turn_reply_fails_its_metric(tmp_path: Path) -> None:
    # HoloDeck executor.py `_run_evaluations` returns no metric for "", so it passes there
    path = write(
        tmp_path,
        """
        test_cases:
          - input: hi
            ground_truth: hello
            evaluations: [{metric: equality}]
        """,
    )
    assert run_one(path, lambda m, c: "").status == "failed"


def test_disabled_standard_metric_does_not_run(tmp_path: Path) -> None:
    # HoloDeck's executor still builds and runs it; convlab follows `enabled`'s intent
    path = write(
        tmp_path,
        """
        test_cases:
          - input: hi
            ground_truth: hello
            evaluations: [{metric: equality, enabled: false}]
        """,
    )
    assert run_one(path, lambda m, c: "something else").status == "passed"


def test_single_turn_grader_sees_tool_calls_and_duck_typed_result(tmp_path: Path) -> None:
    # HoloDeck's single-turn path passes no tool_invocations and accepts only its own
    # GraderResult class; convlab passes them and reads any object with a `score`
    module = grader_module(
        tmp_path,
        """
        class Verdict:
            def __init__(self, score):
                self.score, self.passed, self.reason, self.details = score, None, "ok", None

        def used_lookup(ctx):
            names = [t.name for t in ctx.tool_invocations]
            return Verdict(1.0 if names == ["lookup"] and ctx.test_case_name == "one" else 0.0)
        """,
    )
    path = write(
        tmp_path,
        f"""
        test_cases:
          - name: one
            input: find it
            evaluations: [{{type: code, grader: "{module}:used_lookup"}}]
        """,
    )

    def agent(messages: list[dict[str, Any]], ctx: Any) -> cl.Reply:
        return cl.Reply(text="found", tool_calls=[cl.ToolCall("lookup", {"q": "it"})])

    assert run_one(path, agent).status == "passed"


def test_each_metric_entry_keeps_its_own_options(tmp_path: Path) -> None:
    # HoloDeck keys evaluators by metric name for the whole file: the last config wins
    path = write(
        tmp_path,
        """
        test_cases:
          - name: strict
            input: a
            ground_truth: "HELLO"
            evaluations: [{metric: equality}]
          - name: loose
            input: b
            ground_truth: "HELLO"
            evaluations: [{metric: equality, case_insensitive: true}]
        """,
    )
    run = cl.run(cl.load(path), lambda m, c: "hello", progress=False)
    assert {r.case_id: r.status for r in run.results} == {"strict": "failed", "loose": "passed"}


def test_unquoted_date_stays_text(tmp_path: Path) -> None:
    # HoloDeck's yaml.safe_load makes 2024-01-31 a datetime.date, which never equals text
    path = write(
        tmp_path,
        """
        test_cases:
          - input: when?
            expected_tools:
              - name: book
                args: {day: 2024-01-31}
        """,
    )

    def agent(messages: list[dict[str, Any]], ctx: Any) -> cl.Reply:
        return cl.Reply(text="booked", tool_calls=[cl.ToolCall("book", {"day": "2024-01-31"})])

    assert run_one(path, agent).status == "passed"


def test_no_grader_runs_on_an_empty_multi_turn_reply(tmp_path: Path) -> None:
    # holodeck/lib/test_runner/executor.py `_run_evaluations`: `if not agent_response: return`
    # before any metric or code grader; the multi-turn turn then passes on its other checks
    module = grader_module(
        tmp_path,
        """
        def never(ctx):
            raise AssertionError("a grader ran on an empty reply")
        """,
    )
    path = write(
        tmp_path,
        f"""
        test_cases:
          - name: two
            turns:
              - input: say nothing
                evaluations: [{{type: code, grader: "{module}:never"}}]
              - input: say 3
                ground_truth: "3"
                evaluations: [{{type: standard, metric: equality}}]
        """,
    )

    def agent(messages: list[dict[str, Any]]) -> str:
        return "" if messages[-1]["content"] == "say nothing" else "3"

    result = run_one(path, agent)
    assert result.status == "passed"
    (graded,) = result.turns[0].assertions
    assert (graded.kind, graded.status) == ("grader", "skipped")
