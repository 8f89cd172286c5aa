"""HoloDeck YAML test cases: the multi-turn contract's examples, the real corpus, every load
rule."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convlab
from convlab.errors import Problem, SuiteError
from convlab.formats.yaml_cases import sniff
from convlab.model.assertions import ArgMatcher, ExpectedTool, ExpectedTools, Grader, Metric
from convlab.model.suite import Case, Suite

DATA = Path(__file__).parent / "data" / "yaml_cases"


def write(tmp: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems(tmp: Path, text: str, name: str = "agent.yaml") -> list[Problem]:
    path = write(tmp, text, name)
    with pytest.raises(SuiteError) as err:
        convlab.load(path)
    return err.value.problems


def at(found: list[Problem], path: str) -> Problem:
    hits = [p for p in found if p.path == path]
    assert hits, f"no problem at {path!r}; got {[str(p) for p in found]}"
    return hits[0]


def metrics(assertions: list[Any]) -> list[Metric | Grader]:
    return [a for a in assertions if isinstance(a, Metric | Grader)]


# ------------------------------------------- golden: HoloDeck's multi-turn test-case contract


def test_seed_grammar_a_legacy_single_turn() -> None:
    case = convlab.load(DATA / "contract_grammar.yaml").case("greeting")
    assert case.mode == "standard"
    assert [(m.role, m.content) for m in case.input or []] == [("user", "hello")]
    assert case.assertions == [ExpectedTools(tools=[ExpectedTool(name="greet", bare=True)])]
    assert case.metadata == {"ground_truth": "hi there"}
    assert str(case.source).endswith("contract_grammar.yaml:4")


def test_seed_grammar_b_multi_turn_with_turn_level_assertions() -> None:
    case = convlab.load(DATA / "contract_grammar.yaml").case("convfinqa-0")
    assert case.mode == "turns" and case.n_turns == 4
    assert [t.ground_truth for t in case.turns] == ["206588", "181001", "25587", "14.1%"]
    assert [t.input.text for t in case.turns][1] == "what about in 2008?"
    assert case.turns[0].assertions == [] and case.turns[1].assertions == []
    assert case.turns[2].assertions == [
        ExpectedTools(tools=[ExpectedTool(name="subtract", bare=True)])
    ]
    assert case.turns[3].assertions[0].tools[0].name == "divide"  # type: ignore[union-attr]


def test_seed_grammar_c_object_tools_and_turn_metric() -> None:
    turn = convlab.load(DATA / "contract_grammar.yaml").case("convfinqa-0-strict").turns[1]
    tools, metric = turn.assertions
    assert tools == ExpectedTools(
        tools=[
            ExpectedTool(
                name="subtract",
                args={
                    "a": ArgMatcher(mode="literal", value=206588),
                    "b": ArgMatcher(mode="fuzzy", value="181001"),
                },
            )
        ]
    )
    assert metric == Metric(
        type="standard",
        metric="numeric",
        options={"absolute_tolerance": 0.5},
        ground_truth="25587",
        skip_without_ground_truth=True,
    )
    assert turn.ground_truth == "25587"


def test_seed_mixed_expected_tools_list() -> None:
    (tools,) = (
        convlab.load(DATA / "contract_tools_and_matchers.yaml")
        .case("mixed-list")
        .turns[0]
        .assertions
    )
    assert isinstance(tools, ExpectedTools)
    lookup, subtract, divide = tools.tools
    assert lookup == ExpectedTool(name="lookup", bare=True)
    assert subtract.args == {
        "a": ArgMatcher(mode="literal", value=206588),
        "b": ArgMatcher(mode="literal", value=181001),
    }
    assert (divide.name, divide.count, divide.args, divide.bare) == ("divide", 1, None, False)


def test_seed_every_arg_matcher_shape() -> None:
    (tools,) = (
        convlab.load(DATA / "contract_tools_and_matchers.yaml")
        .case("matcher-shapes")
        .turns[0]
        .assertions
    )
    assert isinstance(tools, ExpectedTools)
    (tool,) = tools.tools
    assert tool.count == 2
    assert tool.args == {
        "a": ArgMatcher(mode="literal", value=206588),
        "items": ArgMatcher(mode="literal", value=[1, 2]),
        "opts": ArgMatcher(mode="literal", value={"mode": "fast"}),
        "f": ArgMatcher(mode="fuzzy", value="206588"),
        "r": ArgMatcher(mode="regex", value="^2009.*$"),
    }
    assert type(tool.args["opts"].value) is dict  # plain data, not the line-tracking dict


def test_seed_metric_precedence_turn_over_case_over_agent() -> None:
    suite = convlab.load(DATA / "contract_overrides.yaml")
    agent_turn, no_truth = suite.case("agent-level").turns
    specs = metrics(agent_turn.assertions)
    assert [getattr(s, "metric", None) or s.grader for s in specs] == [  # type: ignore[union-attr]
        "equality",
        "numeric",
        "my_benchmarks.convfinqa:program_equivalence",
    ]
    assert specs[0].options == {"case_insensitive": True, "strip_whitespace": True}
    assert specs[1].options == {
        "absolute_tolerance": 0.01,
        "accept_percent": True,
        "accept_thousands_separators": True,
    }
    assert all(s.ground_truth == "4" for s in specs)
    assert all(s.skip_without_ground_truth for s in specs if isinstance(s, Metric))
    assert [s.ground_truth for s in metrics(no_truth.assertions)] == [None, None, None]

    first, second, third = suite.case("case-level").turns
    assert [(m.metric, m.options) for m in metrics(first.assertions)] == [("equality", {})]  # type: ignore[union-attr]
    (numeric,) = metrics(second.assertions)
    assert isinstance(numeric, Metric)
    assert (numeric.metric, numeric.options, numeric.ground_truth) == (
        "numeric",
        {"relative_tolerance": 0.1},
        "2",
    )
    # an empty turn list is not an override: the case's list applies
    assert [m.metric for m in metrics(third.assertions)] == ["equality"]  # type: ignore[union-attr]


def test_seed_single_turn_metrics_fail_without_ground_truth() -> None:
    case = convlab.load(DATA / "contract_overrides.yaml").case("single-turn")
    specs = metrics(case.assertions)
    assert len(specs) == 3 and all(s.ground_truth == "Paris" for s in specs)
    assert not any(s.skip_without_ground_truth for s in specs if isinstance(s, Metric))


def test_seed_files_per_turn_resolved_against_the_yaml() -> None:
    first, second = convlab.load(DATA / "contract_files.yaml").case("chart").turns
    (ref,) = first.input.files
    assert ref.path == str((DATA / "data" / "chart.png").resolve())
    assert ref.type == "image"
    assert second.input.files == []  # never replayed on later turns


def test_seed_examples_8_1_to_8_3() -> None:
    suite = convlab.load(DATA / "contract_examples.yaml")
    chat = suite.case("chit-chat")
    assert [t.input.text for t in chat.turns] == ["hi", "who are you?", "tell me a joke"]
    assert chat.n_assertions == 0
    story2 = suite.case("convfinqa-0").turns
    assert story2[1].assertions == [ExpectedTools(tools=[ExpectedTool(name="subtract", bare=True)])]
    (tools,) = suite.case("convfinqa-0-argcheck").turns[0].assertions
    assert tools.tools[0].args == {  # type: ignore[union-attr]
        "a": ArgMatcher(mode="fuzzy", value="206588"),
        "b": ArgMatcher(mode="regex", value=r"^181001(\.0+)?$"),
    }


def test_seed_8_4_numeric_and_code_grader() -> None:
    turn = convlab.load(DATA / "contract_code_grader.yaml").case("convfinqa-0-code-grader").turns[0]
    numeric, grader = turn.assertions
    assert isinstance(numeric, Metric) and numeric.options == {"absolute_tolerance": 0.001}
    assert grader == Grader(
        grader="my_benchmarks.convfinqa:program_equivalence", ground_truth="0.14136"
    )


def test_seed_8_4_grader_that_does_not_import_is_a_problem(tmp_path: Path) -> None:
    text = (
        (DATA / "contract_code_grader.yaml")
        .read_text()
        .replace("my_benchmarks", "nowhere_benchmarks")
    )
    found = problems(tmp_path, text)
    problem = at(found, "test_cases[0].turns[0].evaluations[1].grader")
    assert problem.line == 12
    assert problem.message.startswith("[convfinqa-0-code-grader] cannot import module")
    assert "nowhere_benchmarks" in problem.message


# --------------------------------------------------------------------------- real corpus

CORPUS_COUNTS = {
    "holodeck_agent_ollama_local.yaml": 2,
    "holodeck_convfinqa_sample.yaml": 1,
    "holodeck_optimizer_agent.yaml": 2,
    "holodeck_valid_agent.yaml": 1,
    "samples_content-moderation_openai_agent.yaml": 6,
    "samples_customer-support_openai_agent.yaml": 5,
    "samples_financial-assistant_convfinqa_subset_retrieval.yaml": 133,
    "samples_legal-assistant_claude_agent.yaml": 3,
    "samples_legal-summarization_openai_agent.yaml": 3,
    "samples_ticket-routing_openai_agent.yaml": 5,
}


@pytest.mark.parametrize("name", sorted(CORPUS_COUNTS))
def test_corpus_file_loads(name: str) -> None:
    suite = convlab.load(CORPUS / "holodeck" / name)
    assert len(suite.cases) == CORPUS_COUNTS[name]
    assert suite.sources[0].format == "yaml_cases"
    assert len({c.id for c in suite.cases}) == len(suite.cases)
    assert all(c.source and c.source.line for c in suite.cases)


def test_corpus_agent_keeps_other_keys_as_written() -> None:
    suite = convlab.load(CORPUS / "holodeck/samples_content-moderation_openai_agent.yaml")
    assert suite.id == "content-moderation"
    assert {"model", "tools", "evaluations", "observability", "response_format"} <= set(
        suite.metadata
    )
    assert "test_cases" not in suite.metadata
    assert suite.metadata["model"]["api_key"] == "${OPENAI_API_KEY}"
    assert type(suite.metadata["model"]) is dict
    # agent-level geval / rag metrics reach every single-turn case, with its ground truth
    case = suite.cases[1]
    kinds = [(m.type, m.metric, m.threshold) for m in metrics(case.assertions)]  # type: ignore[union-attr]
    assert kinds == [
        ("geval", "ModerationAccuracy", 0.85),
        ("geval", "ReasoningQuality", 0.75),
        ("rag", "faithfulness", 0.8),
        ("geval", "Consistency", 0.8),
    ]
    assert all('"decision": "remove"' in (m.ground_truth or "") for m in metrics(case.assertions))


def test_corpus_metadata_never_expands_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    suite = convlab.load(CORPUS / "holodeck/samples_legal-summarization_openai_agent.yaml")
    assert "sk-secret" not in suite.to_json()


def test_corpus_payload_133_multi_turn_cases() -> None:
    suite = convlab.load(
        CORPUS / "holodeck/samples_financial-assistant_convfinqa_subset_retrieval.yaml"
    )
    case = suite.case("Double_AAP/2006/page_85.pdf")
    assert case.mode == "turns" and case.n_turns == 4
    assert case.turns[0].config == {
        "turn_program": "82767",
        "expected_document": "Double_AAP/2006/page_85.pdf",
    }
    assert case.turns[0].assertions == [
        ExpectedTools(tools=[ExpectedTool(name="convfinqa_archive", bare=True)])
    ]
    assert sum(c.n_turns for c in suite.cases) == 485


def test_corpus_folder_loads_all_161_cases() -> None:
    suite = convlab.load(CORPUS / "holodeck")
    assert len(suite.cases) == sum(CORPUS_COUNTS.values())
    assert suite.df["mode"].value_counts().to_dict() == {"standard": 27, "turns": 134}


def test_corpus_unnamed_cases_get_stem_and_index() -> None:
    suite = convlab.load(CORPUS / "holodeck/holodeck_agent_ollama_local.yaml")
    assert [c.id for c in suite.cases] == [
        "holodeck_agent_ollama_local[0]",
        "holodeck_agent_ollama_local[1]",
    ]
    # `expected_tools: []` is kept as an empty check (it passes)
    assert suite.cases[0].assertions == [ExpectedTools(tools=[])]


# --------------------------------------------------------------------------- test_cases_file


def test_test_cases_file_relative_to_agent(tmp_path: Path) -> None:
    payload = CORPUS / "holodeck/samples_financial-assistant_convfinqa_subset_retrieval.yaml"
    shutil.copy(payload, write(tmp_path, "", "data/cases.yaml"))
    agent = write(
        tmp_path,
        """
        name: financial-assistant
        model: {provider: openai, name: gpt-4o, api_key: "${OPENAI_API_KEY}"}
        evaluations:
          metrics:
            - type: standard
              metric: numeric
              absolute_tolerance: 0.5
        test_cases_file: data/cases.yaml
        """,
    )
    suite = convlab.load(agent)
    assert len(suite.cases) == 133
    assert [Path(s.file).name for s in suite.sources] == ["agent.yaml", "cases.yaml"]
    assert suite.metadata["test_cases_file"] == "data/cases.yaml"
    first = suite.cases[0].turns[0]
    (numeric,) = metrics(first.assertions)
    assert numeric.ground_truth == "31903.61446"
    assert str(suite.cases[0].source).endswith("cases.yaml:1")
    # the folder holds the agent and its payload: each case is loaded once
    assert len(convlab.load(tmp_path).cases) == 133


def test_test_cases_file_mapping_form_and_empty_file(tmp_path: Path) -> None:
    write(tmp_path, "test_cases:\n  - name: a\n    input: hi\n", "wrapped.yaml")
    write(tmp_path, "", "empty.yaml")
    wrapped = convlab.load(write(tmp_path, "test_cases_file: wrapped.yaml\n"))
    assert [c.id for c in wrapped.cases] == ["a"]
    empty = convlab.load(write(tmp_path, "test_cases_file: empty.yaml\n", "agent2.yaml"))
    assert empty.cases == []


@pytest.mark.parametrize(
    ("text", "files", "line", "message"),
    [
        (
            "test_cases_file: c.yaml\ntest_cases: []\n",
            {"c.yaml": "- input: hi\n"},
            1,
            "Cannot specify both 'test_cases' and 'test_cases_file'; choose one.",
        ),
        ("name: x\ntest_cases_file: missing.yaml\n", {}, 2, "test_cases_file not found at "),
        ("test_cases_file: ''\n", {}, 1, "'test_cases_file' must be a non-empty string path."),
        (
            "test_cases_file: c.yaml\n",
            {"c.yaml": "just: a mapping\n"},
            1,
            "must contain a list of test cases (optionally nested under a 'test_cases:' key); "
            "got dict.",
        ),
    ],
)
def test_test_cases_file_problems(
    tmp_path: Path, text: str, files: dict[str, str], line: int, message: str
) -> None:
    for name, body in files.items():
        write(tmp_path, body, name)
    problem = at(problems(tmp_path, text), "test_cases_file")
    assert problem.line == line and message in problem.message


def test_test_cases_file_errors_point_into_the_payload(tmp_path: Path) -> None:
    write(tmp_path, "- name: a\n  input: hi\n- name: b\n  inptu: hi\n", "cases.yaml")
    found = problems(tmp_path, "test_cases_file: cases.yaml\n")
    problem = at(found, "test_cases[1].inptu")
    assert Path(problem.file).name == "cases.yaml" and problem.line == 4
    assert problem.message == "[b] Extra inputs are not permitted; did you mean 'input'?"
    write(tmp_path, "- name: a\n  input: [unclosed\n", "broken.yaml")
    (syntax,) = problems(tmp_path, "test_cases_file: broken.yaml\n", "agent2.yaml")
    assert Path(syntax.file).name == "broken.yaml" and syntax.line == 3
    assert syntax.message.startswith("invalid YAML")


# --------------------------------------------------------------------------- rules §2.1-2.2

RULES = [
    # (yaml, field path, line, exact message)
    (
        """
        test_cases:
          - name: t
            input: hi
            grund_truth: x
        """,
        "test_cases[0].grund_truth",
        4,
        "[t] Extra inputs are not permitted; did you mean 'ground_truth'?",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tool: [a]
        """,
        "test_cases[0].turns[0].expected_tool",
        5,
        "[t] Extra inputs are not permitted; did you mean 'expected_tools'?",
    ),
    (
        """
        test_cases:
          - name: mixed
            input: hi
            ground_truth: yo
            turns:
              - input: a
        """,
        "test_cases[0]",
        3,
        "[mixed] multi-turn test case (with `turns`) cannot also set top-level "
        "['input', 'ground_truth']; move these fields onto each turn",
    ),
    (
        """
        test_cases:
          - name: t
            turns: []
        """,
        "test_cases[0].turns",
        3,
        "[t] turns must be a non-empty list if provided",
    ),
    (
        """
        test_cases:
          - name: t
            ground_truth: x
        """,
        "test_cases[0]",
        2,
        "[t] test case requires either `input` (single-turn) or `turns` (multi-turn)",
    ),
    (
        """
        test_cases:
          - name: t
            input: "   "
        """,
        "test_cases[0].input",
        3,
        "[t] input must be a non-empty string",
    ),
    (
        """
        test_cases:
          - name: "  "
            input: hi
        """,
        "test_cases[0].name",
        2,
        "name must be non-empty if provided",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                ground_truth: ""
        """,
        "test_cases[0].turns[0].ground_truth",
        5,
        "[t] ground_truth must be non-empty if provided",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - ground_truth: "1"
        """,
        "test_cases[0].turns[0].input",
        4,
        "[t] Field required",
    ),
    (
        """
        test_cases:
          - name: t
            input: 2009
        """,
        "test_cases[0].input",
        3,
        "[t] Input should be a valid string (got int 2009; quote it in the YAML to make it a "
        "string)",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools: subtract
        """,
        "test_cases[0].turns[0].expected_tools",
        5,
        "[t] expected_tools must be a list",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools: [ok, 7]
        """,
        "test_cases[0].turns[0].expected_tools[1]",
        5,
        "[t] expected_tools entries must be str or object, got int",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools:
                  - name: subtract
                    arg: {a: 1}
        """,
        "test_cases[0].turns[0].expected_tools[0]",
        6,
        "[t] unknown keys on ExpectedTool: ['arg']; did you mean 'args'?",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools:
                  - name: subtract
                    count: 0
        """,
        "test_cases[0].turns[0].expected_tools[0].count",
        7,
        "[t] count must be an integer >= 1",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools:
                  - args: {a: 1}
        """,
        "test_cases[0].turns[0].expected_tools[0].name",
        6,
        "[t] name must be a non-empty string",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools:
                  - name: subtract
                    args: [1, 2]
        """,
        "test_cases[0].turns[0].expected_tools[0].args",
        7,
        "[t] args must be a mapping",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools:
                  - name: subtract
                    args:
                      a: {fuzzy: "1", regex: "1"}
        """,
        "test_cases[0].turns[0].expected_tools[0].args.a",
        8,
        "[t] matcher dict must have exactly one of 'fuzzy' or 'regex', not both",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools:
                  - name: subtract
                    args:
                      a: {fuzzy: "1", case: true}
        """,
        "test_cases[0].turns[0].expected_tools[0].args.a",
        8,
        "[t] matcher dict has unknown keys: ['case']",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                expected_tools:
                  - name: subtract
                    args:
                      a: {fuzzy: 206588}
        """,
        "test_cases[0].turns[0].expected_tools[0].args.a.fuzzy",
        8,
        "[t] fuzzy pattern must be a string, got int",
    ),
    (
        """
        test_cases:
          - name: strict
            turns:
              - input: one
              - input: two
              - input: three
                expected_tools:
                  - lookup
                  - name: subtract
                    args:
                      a:
                        regex: "(2009"
        """,
        "test_cases[0].turns[2].expected_tools[1].args.a.regex",
        12,
        "[strict] cannot compile regex: missing ), unterminated subpattern at position 0",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                files:
                  - {path: a.png, type: image, size: 3}
        """,
        "test_cases[0].turns[0].files[0].size",
        6,
        "[t] Extra inputs are not permitted",
    ),
    (
        """
        test_cases:
          - name: t
            input: hi
            files:
              - {path: a.png, type: picture}
        """,
        "test_cases[0].files[0].type",
        5,
        "[t] type must be one of ['csv', 'excel', 'image', 'pdf', 'powerpoint', 'text', 'word'], "
        "got picture",
    ),
    (
        """
        test_cases:
          - name: t
            input: hi
            files:
              - {path: a.png, url: "https://x/a.png", type: image}
        """,
        "test_cases[0].files[0]",
        5,
        "[t] Cannot provide both 'path' and 'url'",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                evaluations:
                  - type: standard
                    metric: numerc
        """,
        "test_cases[0].turns[0].evaluations[0].metric",
        7,
        "[t] Input should be 'groundedness', 'relevance', 'coherence', 'fluency', 'bleu', "
        "'rouge', 'meteor', 'equality' or 'numeric'; did you mean 'numeric'?",
    ),
    (
        """
        test_cases:
          - name: t
            input: hi
            evaluations:
              - metric: numeric
                absolute_tolerence: 0.5
        """,
        "test_cases[0].evaluations[0].absolute_tolerence",
        6,
        "[t] Extra inputs are not permitted; did you mean 'absolute_tolerance'?",
    ),
    (
        """
        test_cases:
          - name: t
            input: hi
            evaluations:
              - type: gevl
                name: Helpful
        """,
        "test_cases[0].evaluations[0].type",
        5,
        "[t] Input tag 'gevl' found using 'type' does not match any of the expected tags: "
        "'standard', 'geval', 'rag', 'code'; did you mean 'geval'?",
    ),
    (
        """
        test_cases:
          - name: t
            input: hi
            evaluations:
              - type: standard
                metric: equality
                response_path: "a..b"
        """,
        "test_cases[0].evaluations[0].response_path",
        7,
        "[t] invalid response_path 'a..b'",
    ),
    (
        """
        test_cases:
          - name: t
            input: hi
            evaluations:
              - type: code
                grader: "not a path"
        """,
        "test_cases[0].evaluations[0].grader",
        6,
        "[t] String should match pattern '^[\\w.]+:[\\w_]+$'",
    ),
    (
        """
        evaluations:
          metrics: []
        test_cases:
          - input: hi
        """,
        "evaluations.metrics",
        2,
        "metrics must have at least one metric",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: hi
                turn_config: [1]
        """,
        "test_cases[0].turns[0].turn_config",
        5,
        "[t] Input should be a valid dictionary (got list [1])",
    ),
    (
        """
        test_cases:
          - name: t
            turns:
              - input: ok
              - input: "\\t "
        """,
        "test_cases[0].turns[1].input",
        5,
        "[t] input must be a non-empty string",
    ),
    (
        """
        test_cases:
          - name: t
            input: hi
            retrieval_context: just one chunk
        """,
        "test_cases[0].retrieval_context",
        4,
        "[t] Input should be a valid list (got str 'just one chunk')",
    ),
    (
        """
        test_cases:
          - just a string
        """,
        "test_cases[0]",
        2,
        "Input should be a valid dictionary or instance of TestCaseModel",
    ),
]


@pytest.mark.parametrize(("text", "path", "line", "message"), RULES)
def test_rule(tmp_path: Path, text: str, path: str, line: int, message: str) -> None:
    problem = at(problems(tmp_path, text), path)
    assert (problem.line, problem.message) == (line, message)
    assert str(problem) == f"{tmp_path / 'agent.yaml'}:{line}: {path}: {message}"


def test_more_than_ten_files(tmp_path: Path) -> None:
    def entries(indent: int) -> str:
        return "".join(f"\n{' ' * indent}- {{path: f{i}.txt, type: text}}" for i in range(11))

    turn = "test_cases:\n  - name: t\n    turns:\n      - input: hi\n        files:" + entries(10)
    found = problems(tmp_path, turn + "\n")
    assert at(found, "test_cases[0].turns[0].files").message == "[t] Maximum 10 files per turn"
    single = "test_cases:\n  - name: t\n    input: hi\n    files:" + entries(6)
    found = problems(tmp_path, single + "\n", "single.yaml")
    assert at(found, "test_cases[0].files").message == "[t] Maximum 10 files per test case"


def test_duplicate_names_name_both_lines(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        test_cases:
          - name: same
            input: one
          - name: other
            input: two
          - name: same
            input: three
        """,
    )
    problem = at(found, "test_cases[2].name")
    assert problem.line == 6
    assert problem.message == "[same] duplicate test case name 'same' at lines 2 and 6"


def test_every_problem_is_collected(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        evaluations:
          metrics:
            - metric: fluncy
        test_cases:
          - name: a
            input: ""
          - name: b
            turns:
              - input: ok
                expected_tools: [{name: x, args: {q: {regex: "["}}}]
              - input: ok
                extra: 1
          - input: fine
          - name: d
        """,
    )
    assert [p.path for p in found] == [
        "evaluations.metrics[0].metric",
        "test_cases[0].input",
        "test_cases[1].turns[0].expected_tools[0].args.q.regex",
        "test_cases[1].turns[1].extra",
        "test_cases[3]",
    ]
    assert [p.line for p in found] == [3, 6, 10, 12, 14]


def test_unnamed_case_problems_carry_index_path(tmp_path: Path) -> None:
    found = problems(tmp_path, "test_cases:\n  - input: hi\n  - input: ok\n    oops: 1\n")
    problem = at(found, "test_cases[1].oops")
    assert problem.message == "Extra inputs are not permitted"


def test_single_turn_files_become_content_parts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        test_cases:
          - name: doc
            input: summarise
            retrieval_context: ["chunk one"]
            files:
              - {path: docs/a.pdf, type: pdf, pages: [1, 2]}
              - {url: "https://example.com/b.png", type: image}
        """,
    )
    case = convlab.load(path).case("doc")
    (message,) = case.input or []
    assert message.text() == "summarise"
    assert isinstance(message.content, list)
    parts = message.content[1:]
    assert parts[0] == {
        "type": "file",
        "file": {
            "path": str(tmp_path / "docs" / "a.pdf"),
            "type": "pdf",
            "extra": {"pages": [1, 2]},
        },
    }
    assert parts[1]["file"]["path"] == "https://example.com/b.png"
    assert parts[1]["file"]["extra"] == {"url": True}
    assert case.metadata["files"] == [p["file"] for p in parts]
    assert case.metadata["retrieval_context"] == ["chunk one"]


def test_env_placeholders_in_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # HoloDeck 0.7.1 config/env_loader.py `substitute_env_vars`: set variables are replaced,
    # an unset one is an error naming it (convlab: with its line and field path)
    monkeypatch.setenv("CONVLAB_T_CITY", "Paris")
    monkeypatch.delenv("CONVLAB_T_UNSET", raising=False)
    text = """
        model: {api_key: "${CONVLAB_T_UNSET}"}
        test_cases:
          - name: t
            input: "Is ${CONVLAB_T_CITY} in France?"
            ground_truth: "${CONVLAB_T_CITY}"
        """
    suite = convlab.load(write(tmp_path, text))
    case = suite.case("t")
    assert (case.input or [])[0].content == "Is Paris in France?"
    assert case.metadata["ground_truth"] == "Paris"
    # the agent's own settings stay as written (a deliberate difference: no secrets)
    assert suite.metadata["model"] == {"api_key": "${CONVLAB_T_UNSET}"}
    found = problems(tmp_path, text.replace("in France", "in ${CONVLAB_T_UNSET}"))
    problem = at(found, "test_cases[0].input")
    assert problem.line == 4 and "'CONVLAB_T_UNSET' not found" in problem.message


def test_disabled_metric_is_dropped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        evaluations:
          metrics:
            - {metric: equality, enabled: false}
            - {type: rag, metric_type: faithfulness}
        test_cases:
          - input: hi
        """,
    )
    (rag,) = metrics(convlab.load(path).cases[0].assertions)
    assert isinstance(rag, Metric) and (rag.type, rag.metric, rag.threshold) == (
        "rag",
        "faithfulness",
        0.5,
    )


# --------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(
    ("name", "text", "claimed"),
    [
        ("agent.yaml", "name: a\ntest_cases:\n  - input: hi\n", True),
        ("agent.yaml", "test_cases_file: data/cases.yaml\n", True),
        ("cases.yml", "- name: a\n  turns:\n    - input: hi\n", True),
        ("broken.yaml", "test_cases:\n  - input: [oops\n", True),
        ("tb.yaml", "test_cases:\n  - scenario: s\n    query: hi\n", False),
        ("list.yaml", '- "banking.py:test_transfer"\n- "x.py:y"\n', False),
        ("scenario.yaml", "world_state: {}\nbot_instructions: be nice\ninput: x\n", False),
        ("x.meta.yaml", "test_cases:\n  - input: hi\n", False),
        ("native.yaml", "convlab_suite: 1\nid: s\ntest_cases: []\n", False),
        ("other.yaml", "steps:\n  - input: hi\n", False),
    ],
)
def test_sniff(name: str, text: str, claimed: bool) -> None:
    assert sniff(Path(name), text) is claimed


def test_thinkingbox_corpus_is_not_claimed() -> None:
    for path in sorted((CORPUS / "thinkingbox").glob("*.yaml")):
        assert not sniff(path, path.read_text(encoding="utf-8")), path.name


# --------------------------------------------------------------------------- properties

KEYS = [
    "name", "input", "turns", "ground_truth", "expected_tools", "files", "retrieval_context",
    "evaluations", "turn_config", "args", "count", "fuzzy", "regex", "type", "metric", "path",
    "threshold", "test_cases", "test_cases_file", "metrics", "grader", "response_path", "zzz",
]  # fmt: skip
SAFE_GRADERS = ["my_benchmarks.convfinqa:program_equivalence", "json:dumps", "no_such_mod:f"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", " ", "hi", "[", "(a", "^2009.*$", "standard", "numeric", "code", "image"]),
    st.sampled_from(SAFE_GRADERS),
    st.text(max_size=8),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    ),
    max_leaves=30,
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for every generated document, with the grader package beside it."""
    folder = tmp_path_factory.mktemp("generated")
    shutil.copytree(DATA / "my_benchmarks", folder / "my_benchmarks")
    return folder


def _load_text(folder: Path, text: str) -> Suite | None:
    path = folder / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        return convlab.load(path, format="yaml_cases")
    except SuiteError as err:
        assert err.problems
        assert all("internal error" not in p.message for p in err.problems), str(err)
        return None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents)
def test_random_documents_give_a_suite_or_a_suite_error(scratch: Path, doc: Any) -> None:
    suite = _load_text(scratch, yaml.safe_dump({"test_cases": [doc]}))
    if suite is not None:
        assert all(isinstance(c, Case) for c in suite.cases)
    _load_text(scratch, yaml.safe_dump(doc))


SEEDS = sorted(DATA.glob("contract_*.yaml"))


def _mutate(node: Any, data: st.DataObject) -> Any:
    """Replace, drop or retype one random node of a parsed document."""
    if isinstance(node, dict) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node, key=str)))
        action = data.draw(st.sampled_from(["drop", "recurse", "replace", "rename"]))
        out = dict(node)
        if action == "drop":
            del out[key]
        elif action == "recurse":
            out[key] = _mutate(out[key], data)
        elif action == "replace":
            out[key] = data.draw(documents)
        else:
            out[data.draw(st.sampled_from(KEYS))] = out.pop(key)
        return out
    if isinstance(node, list) and node and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(node) - 1))
        out_l = list(node)
        out_l[i] = _mutate(out_l[i], data)
        return out_l
    return data.draw(documents)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_mutated_seed_documents(scratch: Path, seed: Path, data: st.DataObject) -> None:
    doc = yaml.safe_load(seed.read_text(encoding="utf-8"))
    for _ in range(data.draw(st.integers(1, 3))):
        doc = _mutate(doc, data)
    _load_text(scratch, yaml.safe_dump(doc))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=200))
def test_arbitrary_text(scratch: Path, text: str) -> None:
    _load_text(scratch, text)


def test_grader_import_leaves_sys_path_as_it_was() -> None:
    before = list(sys.path)
    convlab.load(DATA / "contract_code_grader.yaml")
    assert sys.path == before


def test_geval_threshold_range_and_required_criteria(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        evaluations:
          metrics:
            - type: geval
              name: Helpfulness
              threshold: 4
              evaluation_params: [actual_output, answer]
        test_cases:
          - input: hi
        """,
    )
    assert at(found, "evaluations.metrics[0].threshold").message == (
        "threshold must be between 0.0 and 1.0"
    )
    assert at(found, "evaluations.metrics[0].criteria").message == "Field required"
    assert at(found, "evaluations.metrics[0].evaluation_params").message.startswith(
        "Invalid evaluation_params: ['answer']"
    )
