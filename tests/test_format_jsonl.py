"""The Yao JSONL format (`yao agent test`, as its DESIGN_V2.md and README.md describe it):
what `convlab.load` makes of each file, and its errors."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import CORPUS, UPSTREAM_DOCS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convlab as cl
from convlab.checks._core import EVALUATORS
from convlab.errors import Problem
from convlab.formats.jsonl import parse_jsonl_assertion
from convlab.model.assertions import (
    AgentValidator,
    All,
    Contains,
    Custom,
    Equals,
    JsonPath,
    NotContains,
    Regex,
    Script,
    ToolCalled,
    ToolResult,
    TypeOf,
)

DATA = Path(__file__).parent / "data" / "jsonl"


def write(tmp_path: Path, text: str, name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def jsonl(*cases: object) -> str:
    """One JSON object per line."""
    return "".join(json.dumps(c) + "\n" for c in cases)


def load(tmp_path: Path, text: str) -> cl.Suite:
    return cl.load(write(tmp_path, text))


def problems(tmp_path: Path, text: str) -> list[str]:
    """Every problem as `name:line: path: message` (the file name only)."""
    with pytest.raises(cl.SuiteError) as info:
        load(tmp_path, text)
    return [shown(p) for p in info.value.problems]


def shown(p: Problem) -> str:
    return str(Problem(Path(p.file).name, p.line, p.path, p.message))


def seed(tmp_path: Path, name: str, fixtures: tuple[str, ...] = ()) -> cl.Suite:
    """Load an example of Yao's documents from a copy under tmp_path, with the fixture files
    it names."""
    for rel in fixtures:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"\x00")
    return cl.load(shutil.copy(DATA / name, tmp_path / name))


# -- Yao's documents' examples, as printed -----------------------------------------------------


def test_the_copies_match_yaos_documents() -> None:
    for prefix, page in (("yao_design_v2", "DESIGN_V2"), ("yao_readme", "README")):
        text = (UPSTREAM_DOCS / f"yao_agent-test_{page}.txt").read_text(encoding="utf-8")
        blocks = re.findall(r"```jsonl\n(.*?)```", text, re.S)
        copies = sorted(DATA.glob(f"{prefix}_*.jsonl"))
        assert [p.read_text(encoding="utf-8") for p in copies] == blocks


def test_design_v2_pretty_printed_standard_cases(tmp_path: Path) -> None:
    (t001,) = seed(tmp_path, "yao_design_v2_00_simple_input.jsonl").cases
    assert (t001.id, t001.mode, t001.source.line) == ("T001", "standard", 1)
    assert [(m.role, m.content) for m in t001.input] == [("user", "Hello")]
    assert t001.assertions == [Contains(value="Hi")]

    (t002,) = seed(tmp_path, "yao_design_v2_01_message_history.jsonl").cases
    assert t002.name == "Expense submission - final confirmation"
    assert [m.role for m in t002.input] == ["user", "assistant", "user", "assistant", "user"]
    assert t002.input[-1].content == "Yes, confirm"
    assert t002.assertions == [Contains(value="submitted"), ToolCalled(value="create_expense")]


def test_design_v2_comment_lines_between_pretty_objects(tmp_path: Path) -> None:
    suite = seed(tmp_path, "yao_design_v2_02_conversation_points.jsonl")
    assert [(c.id, c.source.line, len(c.input)) for c in suite.cases] == [
        ("expense-turn1", 2, 1),
        ("expense-turn2", 8, 3),
        ("expense-turn3", 18, 5),
    ]
    assert suite.cases[1].assertions == [ToolCalled(value="create_expense")]
    assert list(suite.df["source"].str.rsplit("/", n=1).str[-1]) == [
        "yao_design_v2_02_conversation_points.jsonl:2",
        "yao_design_v2_02_conversation_points.jsonl:8",
        "yao_design_v2_02_conversation_points.jsonl:18",
    ]


def test_design_v2_attachment_resolved_against_the_file(tmp_path: Path) -> None:
    (case,) = seed(tmp_path, "yao_design_v2_03_attachments.jsonl", ("fixtures/receipt.jpg",)).cases
    parts = case.input[0].content
    assert parts[0] == {"type": "text", "text": "What's in this receipt?"}
    assert parts[1] == {"type": "image", "source": f"file://{tmp_path / 'fixtures/receipt.jpg'}"}


def test_design_v2_dynamic_case(tmp_path: Path) -> None:
    (case,) = seed(tmp_path, "yao_design_v2_04_dynamic_mode.jsonl").cases
    assert (case.id, case.mode, case.input) == ("T004", "dynamic", None)
    assert case.simulator is not None
    assert case.simulator.use == "workers.test.user-simulator"
    assert case.simulator.persona == "New employee unfamiliar with expense process"
    assert case.simulator.goal == "Submit a $3500 travel expense"
    assert (case.limits.max_turns, case.limits.timeout_s) == (10, 120.0)
    assert [(c.id, c.after, c.required) for c in case.checkpoints] == [
        ("ask_type", [], True),
        ("call_create", ["ask_type"], True),
        ("confirm", ["call_create"], True),
    ]
    assert case.checkpoints[1].assertion == ToolCalled(value="create_expense")
    assert case.checkpoints[2].description == "Agent confirms submission"
    assert case.n_assertions == 3


def test_design_v2_hooks_and_assertion_blocks(tmp_path: Path) -> None:
    (case,) = seed(tmp_path, "yao_design_v2_05_before_after.jsonl").cases
    assert (case.hooks.before, case.hooks.after) == ("env_test.Before", "env_test.After")
    agent = parse_jsonl_assertion(
        json.loads((DATA / "yao_design_v2_06_agent_assertion.jsonl").read_text())
    )
    assert isinstance(agent, AgentValidator)
    assert agent.use == "agents:workers.test.validator"
    assert agent.options["metadata"]["tone"] == "professional and friendly"
    script = parse_jsonl_assertion(
        json.loads((DATA / "yao_design_v2_07_script_assertion.jsonl").read_text())
    )
    assert script == Script(
        script="scripts:tests.validate-expense",
        options={"metadata": {"min_amount": 100, "max_amount": 10000}},
    )


def test_design_v2_backward_compat_fragment_is_two_syntax_errors(tmp_path: Path) -> None:
    with pytest.raises(cl.SuiteError) as info:
        seed(tmp_path, "yao_design_v2_08_backward_compat.jsonl")
    assert [(p.line, p.message.split(" (")[0]) for p in info.value.problems] == [
        (2, "invalid JSON: Expecting value"),
        (4, "invalid JSON: Expecting value"),
    ]


def test_readme_input_forms_and_skip(tmp_path: Path) -> None:
    suite = seed(tmp_path, "yao_readme_00_input_format.jsonl")
    t1, t2, t3, t4, t5 = suite.cases
    assert [(m.role, m.content) for m in t1.input] == [("user", "Simple text")]
    assert [(m.role, m.content) for m in t2.input] == [("user", "Message with role")]
    assert [m.role for m in t3.input] == ["user", "assistant", "user"]
    assert t4.assertions == [JsonPath(path="field", value=True)]
    assert (t5.skip, t1.skip) == ("skip: true", None)
    assert list(suite.df["mode"]) == ["standard"] * 5


def test_readme_options_and_metadata(tmp_path: Path) -> None:
    (case,) = seed(tmp_path, "yao_readme_01_options.jsonl").cases
    assert case.options == {
        "connector": "deepseek.v3",
        "metadata": {"scenario": "filter"},
        "skip": {"trace": True},
    }
    assert case.assertions == [JsonPath(path="from", value="users")]
    t1, t2 = seed(tmp_path, "yao_readme_02_options_metadata.jsonl").cases
    assert t1.options == {"metadata": {"scenario": "aggregation"}}
    assert t2.options == {"metadata": {"scenario": "join"}}


@pytest.mark.parametrize(
    ("name", "fixtures", "kinds"),
    [
        ("yao_readme_03_image_attachment.jsonl", ("fixtures/invoice.jpg",), ["text", "image"]),
        (
            "yao_readme_04_multiple_attachments.jsonl",
            ("fixtures/receipt1.png", "fixtures/receipt2.png", "fixtures/policy.pdf"),
            ["text", "image", "image", "file"],
        ),
        ("yao_readme_05_audio.jsonl", ("fixtures/recording.wav",), ["text", "audio"]),
    ],
)
def test_readme_attachments(
    tmp_path: Path, name: str, fixtures: tuple[str, ...], kinds: list[str]
) -> None:
    (case,) = seed(tmp_path, name, fixtures).cases
    parts = case.input[0].content
    assert [p["type"] for p in parts] == kinds
    assert [p["source"] for p in parts[1:]] == [f"file://{tmp_path / f}" for f in fixtures]
    if name.startswith("yao_readme_04"):
        assert parts[3]["name"] == "expense_policy.pdf"


def test_readme_assertion_examples(tmp_path: Path) -> None:
    (t1,) = seed(tmp_path, "yao_readme_06_json_path.jsonl").cases
    assert t1.assertions == [JsonPath(path="need_search", value=True)]
    (t2,) = seed(tmp_path, "yao_readme_07_multiple_assertions.jsonl").cases
    assert t2.assertions == [JsonPath(path="need_search", value=False), NotContains(value="error")]
    (t3,) = seed(tmp_path, "yao_readme_08_script_assertion.jsonl").cases
    assert t3.assertions == [Script(script="scripts.test.Validate")]
    (t4,) = seed(tmp_path, "yao_readme_09_negated.jsonl").cases
    assert t4.assertions == [Contains(value="error", negate=True)]


def test_readme_snippets_without_input_are_rejected_as_yao_does(tmp_path: Path) -> None:
    with pytest.raises(cl.SuiteError) as info:
        seed(tmp_path, "yao_readme_10_array_index.jsonl")
    assert [(p.line, p.path, p.message) for p in info.value.problems] == [
        (n, "input", "missing required field 'input'") for n in (1, 2, 3, 4)
    ]
    with pytest.raises(cl.SuiteError) as info:
        seed(tmp_path, "yao_readme_11_or_values.jsonl")
    assert [p.line for p in info.value.problems] == [1]


def test_dynamic_cases_from_yaos_integration_tests(tmp_path: Path) -> None:
    optional, coffee, impossible = seed(tmp_path, "yao_dynamic_integration.jsonl").cases
    assert [c.mode for c in (optional, coffee, impossible)] == ["dynamic"] * 3
    assert [(c.id, c.required) for c in optional.checkpoints] == [
        ("greeting_response", True),
        ("special_offer", False),
    ]
    assert optional.checkpoints[0].assertion == Regex(pattern="(?i)(hello|hi|help)")
    assert [m.content for m in optional.input] == ["Hello"]
    assert [c.after for c in coffee.checkpoints] == [[], ["greeting"], ["ask_size"]]
    assert coffee.simulator.metadata == {"drink": "latte"}
    assert coffee.simulator.options == {"connector": "gpt-4o-mini"}
    assert impossible.limits.max_turns == 2


def test_every_corpus_file_loads() -> None:
    files = sorted((CORPUS / "yao").glob("*.jsonl"))
    counts = {f.name: len(cl.load(f).cases) for f in files}
    assert counts == {
        "designer_inputs.jsonl": 5,
        "yao-craft_inputs.jsonl": 2,
        "yao-dev-app_hooks-test_inputs.jsonl": 3,
    }
    craft = cl.load(CORPUS / "yao" / "yao-craft_inputs.jsonl")
    assert craft.cases[1].limits.timeout_s == 300.0
    assert craft.cases[1].assertions == [Contains(value="游戏")]
    folder = cl.load(CORPUS / "yao")
    assert len(folder.cases) == 10


# -- case fields --------------------------------------------------------------------------------


def test_suite_id_sources_and_df(tmp_path: Path) -> None:
    suite = load(tmp_path, '{"id": "a", "input": "x"}\n\n// note\n{"id": "b", "input": "y"}\n')
    assert suite.id == "t"
    assert [(s.format, s.line) for s in suite.sources] == [("jsonl", None)]
    assert list(suite.df["source"].str.rsplit("/", n=1).str[-1]) == ["t.jsonl:1", "t.jsonl:4"]
    assert list(suite.df["assertions"]) == [0, 0]


def test_optional_fields(tmp_path: Path) -> None:
    case = {"id": "a", "name": "A", "description": "d", "tags": ["x", "y"], "input": "hi"}
    case |= {"user": "u1", "team": "t1", "options": {"connector": "c"}, "metadata": {"k": 1}}
    case |= {"timeout": "2m30s", "before": "env.B", "after": "env.A"}
    (case,) = load(tmp_path, jsonl(case)).cases
    assert (case.name, case.description, case.tags) == ("A", "d", ["x", "y"])
    assert case.options == {"connector": "c", "user": "u1", "team": "t1"}
    assert case.metadata == {"k": 1}
    assert case.limits.timeout_s == 150.0
    assert (case.hooks.before, case.hooks.after) == ("env.B", "env.A")


def test_expected_becomes_equals_and_assert_wins(tmp_path: Path) -> None:
    a, b = load(
        tmp_path,
        """\
        {"id": "a", "input": "x", "expected": {"ok": true}}
        {"id": "b", "input": "x", "expected": "ignored", "assert": "contains"}
        """,
    ).cases
    assert a.assertions == [Equals(value={"ok": True}, message="output does not match expected")]
    assert b.assertions == [Contains(value=None)]


def test_assert_forms_and_the_assertions_alias(tmp_path: Path) -> None:
    a, b, c = load(
        tmp_path,
        """\
        {"id": "a", "input": "x", "assert": {"value": "same"}}
        {"id": "b", "input": "x", "assertions": [{"type": "contains", "value": 5}, "not_contains"]}
        {"id": "c", "input": "x", "assert": []}
        """,
    ).cases
    assert a.assertions == [Equals(value="same")]
    assert b.assertions == [Contains(value=5), NotContains(value=None)]
    assert c.assertions == []


def test_input_forms(tmp_path: Path) -> None:
    history = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"content": "u", "refusal": "r"},
    ]
    a, b = load(
        tmp_path, jsonl({"id": "a", "input": {"content": "one"}}, {"id": "b", "input": history})
    ).cases
    assert [(m.role, m.content) for m in a.input] == [("user", "one")]
    assert [m.role for m in b.input] == ["system", "assistant", "user"]
    assert b.input[1].tool_calls == [{"id": "1"}]
    assert b.input[2].model_dump()["refusal"] == "r"


def test_dynamic_without_simulator_or_input_uses_the_runs_simulator(tmp_path: Path) -> None:
    checkpoint = {"id": "c", "assertion": {"type": "contains", "value": "x"}}
    (case,) = load(tmp_path, jsonl({"id": "d", "checkpoints": [checkpoint]})).cases
    assert (case.mode, case.simulator, case.input) == ("dynamic", None, None)


def test_checkpoint_assert_list_becomes_all(tmp_path: Path) -> None:
    checkpoint = {"id": "c", "assert": ["contains", {"type": "regex", "pattern": "a+"}]}
    (case,) = load(tmp_path, jsonl({"id": "d", "checkpoints": [checkpoint]})).cases
    assert case.checkpoints[0].assertion == All(assertions=[Contains(), Regex(pattern="a+")])


def test_file_sources_resolve_against_the_jsonl_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = tmp_path / "suite"
    (sub / "img").mkdir(parents=True)
    (sub / "img" / "a.png").write_bytes(b"png")
    monkeypatch.chdir(tmp_path)  # relative to the file, not to the working folder
    parts = [{"type": "image", "source": "file://img/a.png"}, {"type": "text", "text": "file://x"}]
    path = write(sub, jsonl({"id": "a", "input": {"content": parts}}))
    (case,) = cl.load(Path("suite") / path.name).cases
    assert case.input[0].content[0]["source"] == f"file://{sub / 'img' / 'a.png'}"
    assert case.input[0].content[1] == {"type": "text", "text": "file://x"}


# -- rules and their errors (file:line: path: message) ------------------------------------------


def test_required_fields(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        """\
        {"input": "no id"}
        {"id": "", "input": "x"}
        {"id": 7, "input": "x"}
        {"id": "b"}
        {"id": "c", "input": null}
        """,
    ) == [
        "t.jsonl:1: id: missing required field 'id'",
        "t.jsonl:2: id: 'id' must be a non-empty string, got ''",
        "t.jsonl:3: id: 'id' must be a non-empty string, got number 7",
        "t.jsonl:4: input: missing required field 'input'",
        "t.jsonl:5: input: missing required field 'input'",
    ]


@pytest.mark.parametrize("text", ["", "\n\n", "// only a comment\n   \n"])
def test_no_test_cases_found(tmp_path: Path, text: str) -> None:
    assert problems(tmp_path, text) == ["t.jsonl: no test cases found"]


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        '{"id": "a", "input": "x"}\n{"id": "b", "input": "x"}\n{"id": "a", "input": "y"}\n',
    ) == ["t.jsonl:3: id: duplicate id 'a': also on line 1"]


def test_message_errors(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        """\
        {"id": "a", "input": [{"content": "ok"}, "text", {"role": "user"}]}
        {"id": "b", "input": 5}
        {"id": "c", "input": []}
        {"id": "d", "input": {"role": 3, "content": "x"}}
        """,
    ) == [
        "t.jsonl:1: input[1]: invalid message type at index 1: expected an object, got string",
        "t.jsonl:1: input[2]: message missing 'content' field",
        "t.jsonl:2: input: 'input' must be a string, a message object or a list of messages, "
        "got number",
        "t.jsonl:3: input: 'input' is an empty list: give at least one message",
        "t.jsonl:4: input.role: Input should be a valid string",
    ]


def test_content_errors(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        jsonl(
            {"id": "a", "input": {"content": [1, {"type": "text", "text": "t"}, "x"]}},
            {"id": "b", "input": [{"content": 5}]},
            {"id": "c", "input": {"content": "x", "tool_calls": "no"}},
        ),
    ) == [
        "t.jsonl:1: input.content[0]: a content part must be an object, got number",
        "t.jsonl:1: input.content[2]: a content part must be an object, got string",
        "t.jsonl:2: input[0].content: 'content' must be a string or a list of content parts, "
        "got number",
        "t.jsonl:3: input.tool_calls: Input should be a valid list",
    ]


def test_missing_attachment_names_the_path_and_the_file(tmp_path: Path) -> None:
    parts = [{"type": "text", "text": "t"}, {"type": "audio", "source": "file://./none.wav"}]
    (got,) = problems(tmp_path, jsonl({"id": "a", "input": [{"content": parts}]}))
    assert got == (
        f"t.jsonl:1: input[0].content[1].source: file not found: {tmp_path / 'none.wav'} "
        "(from 'file://./none.wav')"
    )


def test_field_type_errors(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        """\
        {"id": "a", "input": "x", "skip": "yes", "timeout": "soon", "max_turns": 0, "tags": "t"}
        {"id": "b", "input": "x", "timeout": "0s", "options": [], "name": 1}
        """,
    ) == [
        "t.jsonl:1: tags: 'tags' must be a list of strings",
        "t.jsonl:1: skip: 'skip' must be true or false, got string",
        "t.jsonl:1: timeout: invalid duration 'soon': use a Go duration such as '30s', '2m30s' "
        "or '1h'",
        "t.jsonl:1: max_turns: 'max_turns' must be a whole number >= 1, got 0",
        "t.jsonl:2: name: 'name' must be a string, got number",
        "t.jsonl:2: options: 'options' must be an object, got array",
        "t.jsonl:2: timeout: the timeout must be positive, got '0s'",
    ]


def test_unknown_keys_suggest_the_known_one(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        '{"id": "a", "input": "x", "asert": {"type": "contains", "value": "y"}, "zzz": 1}\n',
    ) == [
        "t.jsonl:1: asert: unknown field 'asert'. Did you mean 'assert'?",
        "t.jsonl:1: zzz: unknown field 'zzz'. (known fields: after, assert, assertions, before, "
        "checkpoints, description, expected, id, input, max_turns, metadata, name, options, "
        "simulator, skip, tags, team, timeout, user)",
    ]


def test_both_spellings_at_once_is_a_problem(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        '{"id": "a", "input": "x", "assert": "contains", "assertions": "contains"}\n',
    ) == ["t.jsonl:1: assertions: give either 'assert' or 'assertions', not both"]


def test_dynamic_mode_errors(tmp_path: Path) -> None:
    checkpoints = [
        {"id": "x", "assert": "contains"},
        {"id": "y", "assertion": "contains", "after": "x"},
        {"description": "no id", "requried": False},
    ]
    assert problems(
        tmp_path,
        jsonl(
            {"id": "a", "input": "x", "simulator": {"use": "sim"}},
            {"id": "b", "simulator": {"use": "sim", "persona": "p"}, "checkpoints": []},
            {"id": "c", "checkpoints": checkpoints},
        ),
    ) == [
        "t.jsonl:1: simulator: a simulator needs 'checkpoints': a dynamic case ends when every "
        "required checkpoint is reached (add checkpoints or remove the simulator)",
        "t.jsonl:2: simulator.persona: unknown simulator field 'persona'. Put it in "
        "simulator.options.metadata.",
        "t.jsonl:2: checkpoints: 'checkpoints' is empty: a dynamic case needs at least one",
        "t.jsonl:3: checkpoints[1].after: 'after' must be a list of checkpoint ids",
        "t.jsonl:3: checkpoints[2].requried: unknown checkpoint field 'requried'. Did you mean "
        "'required'?",
        "t.jsonl:3: checkpoints[2].id: missing required field 'id'",
        "t.jsonl:3: checkpoints[2].assert: missing required field 'assert' (what reaches it)",
    ]


def test_a_misspelt_simulator_or_tool_result_field_gets_a_hint(tmp_path: Path) -> None:
    checkpoints = [{"id": "x", "assert": {"type": "tool_result", "value": {"tol": "t"}}}]
    assert problems(
        tmp_path, jsonl({"id": "a", "simulator": {"usr": "sim"}, "checkpoints": checkpoints})
    ) == [
        "t.jsonl:1: simulator.usr: unknown simulator field 'usr'. Did you mean 'use'?",
        "t.jsonl:1: checkpoints[0].assert.value.tol: unknown field 'tol' (tool_result reads "
        "tool and result). Did you mean 'tool'?",
        "t.jsonl:1: checkpoints[0].assert.value.tool: tool_result needs the tool name in "
        "'value.tool'",
    ]


def test_duplicate_checkpoint_ids(tmp_path: Path) -> None:
    checkpoints = [{"id": "x", "assert": "contains"}, {"id": "x", "assertion": "contains"}]
    assert problems(tmp_path, jsonl({"id": "c", "checkpoints": checkpoints})) == [
        "t.jsonl:1: checkpoints[1].id: duplicate checkpoint id 'x' (also checkpoints[0])"
    ]


def test_assertion_problems_carry_their_path(tmp_path: Path) -> None:
    checks = [{"type": "contians", "value": "y"}, {"type": "regex", "value": "("}]
    checkpoint = {"id": "c", "assertion": {"type": "regex", "pattern": 5}}
    assert problems(
        tmp_path,
        jsonl(
            {"id": "a", "input": "x", "assert": checks},
            {"id": "b", "input": "x", "checkpoints": [checkpoint]},
        ),
    ) == [
        "t.jsonl:1: assert[0].type: unknown assertion type 'contians'. Did you mean 'contains'?",
        "t.jsonl:1: assert[1].value: cannot compile regex '(': missing ), unterminated subpattern "
        "at position 0",
        "t.jsonl:2: checkpoints[0].assertion.pattern: regex pattern must be a string, got number",
    ]


# -- syntax errors never hide later problems ------------------------------------------------------


def test_bad_line_2_and_bad_line_5_are_both_reported(tmp_path: Path) -> None:
    got = problems(
        tmp_path,
        """\
        {"id": "a", "input": "x"}
        {"id": "b", "input": "x",}
        {"id": "c", "input": "x"}
        {"id": "d", "input": "x"}
        {"id": "e" "input": "x"}
        {"id": "f", "input": "x", "assert": {"type": "nope"}}
        """,
    )
    assert got[:2] == [
        "t.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes (column 26)",
        "t.jsonl:5: invalid JSON: Expecting ',' delimiter (column 12)",
    ]
    assert got[2].startswith("t.jsonl:6: assert.type: unknown assertion type 'nope'. Known types:")
    assert len(got) == 3


def test_an_unclosed_line_does_not_swallow_the_next_ones(tmp_path: Path) -> None:
    assert problems(tmp_path, '{"id": "a", "input": "x"}\n{"id": \n{"input": "no id"}\n') == [
        "t.jsonl:2: invalid JSON: the object starting on this line is never closed",
        "t.jsonl:3: id: missing required field 'id'",
    ]
    assert problems(tmp_path, '{"id": "a", "input": "x"\n{"id": "b"}\n') == [
        "t.jsonl:1: invalid JSON: Expecting ',' delimiter (column 25)",
        "t.jsonl:2: input: missing required field 'input'",
    ]


def test_pretty_printed_error_names_the_object_start_and_the_bad_line(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        """\
        {
          "id": "a",
          "input": "x"
          "assert": "contains"
        }
        // next
        {
          "id": "b",
          "input": "x",
          "assert": {"type": "contains", "valeu": 1}
        }
        """,
    ) == [
        "t.jsonl:1: invalid JSON: Expecting ',' delimiter (line 4, column 3)",
        "t.jsonl:7: assert.valeu: unknown field 'valeu' for a 'contains' assertion. Did you mean "
        "'value'? (fields: id, label, message, negate, type, value)",
    ]


def test_unclosed_pretty_object_then_a_good_one(tmp_path: Path) -> None:
    text = '{\n"id": "a",\n"input": [\n{"content": "x"}\n,\n"assert": []\n}\n'
    text += '{\n"id": "b",\n"input": "y"\n}\n{"id": "c"}\n'
    assert problems(tmp_path, text) == [
        "t.jsonl:1: invalid JSON: the object starting on this line is never closed",
        "t.jsonl:12: input: missing required field 'input'",  # b was read, c is checked
    ]


def test_lines_that_are_not_objects(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        '[1, 2]\n{"id": "a", "input": "x"}\nnot json\n"id": "x",\n}\n{"id": "b", "input": NaN}\n',
    ) == [
        "t.jsonl:1: each line must be a JSON object, got array",
        "t.jsonl:3: invalid JSON: Expecting value (column 1) "
        "(lines 3-5 are not part of any JSON object)",
        "t.jsonl:6: invalid JSON: NaN is not valid JSON",
    ]


def test_crlf_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"id": "a", "input": "x"}\r\n{\r\n"id": "b",\r\n"input": "y"\r\n}\r\n'
    )
    assert [(c.id, c.source.line) for c in cl.load(path).cases] == [("a", 1), ("b", 2)]


def test_result_streams_are_not_suites(tmp_path: Path) -> None:
    write(tmp_path, '{"type": "start", "total_cases": 1}\n{"type": "summary"}\n', "out.jsonl")
    write(tmp_path, '{"id": "a", "input": "x"}\n', "cases.jsonl")
    assert [c.id for c in cl.load(tmp_path).cases] == ["a"]
    with pytest.raises(cl.SuiteError, match="not a recognised suite file"):
        cl.load(tmp_path / "out.jsonl")


# -- assertions: parse_jsonl_assertion ------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "spec"),
    [
        ({"value": 1}, Equals(value=1)),
        ({"type": "", "value": "x"}, Equals(value="x")),
        ("contains", Contains()),
        (
            {"type": "not_contains", "value": "e", "message": "m", "negate": True},
            NotContains(value="e", message="m", negate=True),
        ),
        ({"type": "regex", "value": "\\d+"}, Regex(pattern="\\d+")),
        ({"type": "regex", "pattern": "order-\\d+"}, Regex(pattern="order-\\d+")),
        (
            {"type": "json_path", "path": "$.a[0]", "value": ["x", "y"]},
            JsonPath(path="$.a[0]", value=["x", "y"]),
        ),
        ({"type": "type", "value": "object"}, TypeOf(value="object")),
        (
            {"type": "type", "path": "$.count", "value": "number"},
            TypeOf(value="number", path="$.count"),
        ),
        ({"type": "tool_called", "value": "setup"}, ToolCalled(value="setup")),
        ({"type": "tool_called", "value": ["a", "b"]}, ToolCalled(value=["a", "b"])),
        (
            {"type": "tool_called", "value": {"name": "a", "arguments": {"x": 1}}},
            ToolCalled(value={"name": "a", "arguments": {"x": 1}}),
        ),
        (
            {"type": "tool_called", "name": "a", "arguments": {"x": 1}},
            ToolCalled(value={"name": "a", "arguments": {"x": 1}}),
        ),
        ({"type": "tool_result", "value": {"tool": "t"}}, ToolResult(tool="t")),
        (
            {"type": "tool_result", "value": {"tool": "t", "result": None}},
            ToolResult(tool="t", result=None, has_result=True),
        ),
        (
            {"type": "script", "script": "scripts.test.Check", "value": 3},
            Script(script="scripts.test.Check", value=3),
        ),
        (
            {"type": "agent", "use": "agents:v", "value": "polite"},
            AgentValidator(use="agents:v", value="polite"),
        ),
    ],
)
def test_assertion_mapping(written: object, spec: object) -> None:
    assert parse_jsonl_assertion(written) == spec


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        (5, "<check>: assert: an assertion must be an object or a type name, got number"),
        ({"type": 3}, "<check>: assert.type: assertion type must be a string, got number"),
        ({"type": "regex"}, "<check>: assert.value: regex pattern must be a string, got null"),
        (
            {"type": "regex", "value": "a", "pattern": "b"},
            "<check>: assert.pattern: give either 'value' or 'pattern', not both",
        ),
        (
            {"type": "type", "value": "int"},
            "<check>: assert.value: type assertion value must be one of null, string, number, "
            "boolean, array, object; got 'int'",
        ),
        (
            {"type": "tool_called"},
            "<check>: assert.value: tool_called needs a tool name, a list of names or "
            "{name, arguments}; got null",
        ),
        (
            {"type": "tool_called", "value": 3},
            "<check>: assert.value: tool_called needs a tool name, a list of names or "
            "{name, arguments}; got number",
        ),
        (
            {"type": "tool_result", "value": {"result": 1}},
            "<check>: assert.value.tool: tool_result needs the tool name in 'value.tool'",
        ),
        (
            {"type": "tool_result", "value": {"tool": "t", "reslt": 1}},
            "<check>: assert.value.reslt: unknown field 'reslt' (tool_result reads tool and "
            "result). Did you mean 'result'?",
        ),
        ({"type": "script"}, "<check>: assert.script: script assertion requires a script name"),
        (
            {"type": "contains", "negate": "yes"},
            "<check>: assert.negate: 'negate' must be true or false, got string",
        ),
        (
            {"type": "json_path", "path": 1},
            "<check>: assert.path: 'path' must be a string, got number",
        ),
    ],
)
def test_assertion_errors(written: object, problem: str) -> None:
    with pytest.raises(cl.SuiteError) as info:
        parse_jsonl_assertion(written)
    assert [str(p) for p in info.value.problems] == [problem]


def test_assertion_error_location_is_given_by_the_caller() -> None:
    with pytest.raises(cl.SuiteError) as info:
        parse_jsonl_assertion({"type": "contans"}, file="f.jsonl", line=3, path="assert[2]")
    assert (
        str(info.value)
        == "f.jsonl:3: assert[2].type: unknown assertion type 'contans'. Did you mean 'contains'?"
    )


def test_unknown_type_lists_the_known_ones() -> None:
    with pytest.raises(cl.SuiteError, match=r"Known types: .*\bcontains\b.*@convlab.evaluator"):
        parse_jsonl_assertion({"type": "zzzz"})


def test_registered_evaluator_is_a_custom_assertion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EVALUATORS._items, "word_count", lambda ctx, params: True)
    spec = parse_jsonl_assertion({"type": "word_count", "max": 5, "negate": True, "message": "m"})
    assert spec == Custom(evaluator="word_count", parameters={"max": 5}, negate=True, message="m")


# -- property-based: any text gives a Suite or a SuiteError -------------------------------------

_CASE = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=4),
        "input": st.one_of(st.text(max_size=5), st.just([{"content": "x"}])),
    },
    optional={
        "assert": st.one_of(
            st.sampled_from(["contains", "regex", "type", "tool_called", "bogus"]),
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(
                        ["contains", "regex", "json_path", "type", "tool_result"]
                    ),
                    "value": st.none() | st.text(max_size=3) | st.integers(),
                }
            ),
        ),
        "checkpoints": st.lists(
            st.fixed_dictionaries({"id": st.text(max_size=2), "assert": st.just("contains")}),
            max_size=2,
        ),
        "simulator": st.just({"use": "s"}),
        "timeout": st.sampled_from(["1s", "x", 3, -1]),
        "skip": st.booleans(),
    },
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=6,
)
_LINE = st.one_of(
    _CASE.map(json.dumps),
    _CASE.map(lambda c: json.dumps(c, indent=1)),
    _JSON.map(json.dumps),
    st.text(alphabet='{}[]",: /\nab\\', max_size=12),
    st.just("// comment"),
    st.just(""),
)


def _loads_or_suite_error(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    try:
        suite = cl.load(path)
    except cl.SuiteError as err:
        assert err.problems and all(p.file == str(path) for p in err.problems)
    else:
        assert suite.cases and all(c.source.format == "jsonl" for c in suite.cases)


@settings(
    max_examples=150, deadline=10_000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_LINE, max_size=6))
def test_random_documents_load_or_raise_suite_error(tmp_path: Path, lines: list[str]) -> None:
    _loads_or_suite_error(tmp_path / "r.jsonl", "\n".join(lines))


@settings(
    max_examples=150, deadline=10_000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cases=st.lists(_CASE, min_size=1, max_size=3),
    pretty=st.booleans(),
    edits=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(["del", *'{}[]",:\n/'])), max_size=4
    ),
)
def test_mutated_documents_load_or_raise_suite_error(
    tmp_path: Path, cases: list[dict[str, object]], pretty: bool, edits: list[tuple[int, str]]
) -> None:
    text = "\n".join(json.dumps(c, indent=2 if pretty else None) for c in cases)
    for at, edit in edits:
        at %= len(text) + 1
        text = text[:at] + text[at + 1 :] if edit == "del" else text[:at] + edit + text[at:]
    _loads_or_suite_error(tmp_path / "m.jsonl", text)
