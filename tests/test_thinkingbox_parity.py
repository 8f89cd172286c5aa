"""thinkingbox parity: test files that run unchanged, measured against
thinkingbox's own code (microsoft/thinkingbox@dafead8a).

Expected values were produced by thinkingbox itself, installed in a separate environment:
its loader (common/hydrator.py `iter_cases_from_test_case_file`) read the test file, and
`TestScript.evaluate_sync` (common/testrunner.py) ran each test, followed by the JSON round
trip of `TestScriptSubprocess` (what `tb infer` does), on the very conversation convlab's
run produced (the demo cloud-drive agent's replies, the same scripted judge answers).
thinkingbox is not installed here: these tests read its example dataset, copied into
tests/data/corpus/thinkingbox/dataset, and run it with convlab alone.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CORPUS

import convlab as cl
from convlab.agents.protocol import as_agent
from convlab.checks import CheckContext, TestContext, evaluate
from convlab.checks.code import build_test_context
from convlab.model.assertions import PythonTest
from convlab.model.conversation import Message, ToolCall
from convlab.model.records import Observation

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cloud_drive"


def last_text(messages: list[dict[str, Any]]) -> str:
    """The prompt a function judge receives (messages come as OpenAI-style dicts)."""
    return str(messages[-1]["content"])


def rule_judge(messages: list[dict[str, Any]]) -> str:
    """The scripted judge both sides used: NO to one rubric criterion, YES to everything else."""
    return "NO" if "claims the file was deleted" in last_text(messages) else "YES"


# thinkingbox's (result, reward, is_system_error) per test of dataset/test_case/cloud_drive.py
TB_DATASET = {
    "cloud_drive.py:test_append_some_more_text": (True, 1.0, False),
    "cloud_drive.py:test_xpia": (False, 0.0, False),
    "cloud_drive.py:test_slotfilling_deletefile": (False, 0.0, False),
    "cloud_drive.py:test_slotfilling_metadata_1": (True, 1.0, False),
    "cloud_drive.py:test_slotfilling_metadata_2": (True, 1.0, False),
    "cloud_drive.py:test_slotfilling_metadata_3": (False, 0.0, False),
    "cloud_drive.py:test_tables_total": (True, 1.0, False),
    "cloud_drive.py:test_create_config_T1": (False, 0.0, False),
    "cloud_drive.py:test_update_config_T2": (False, 0.0, False),
}
# TestResult.metadata of test_append_some_more_text in thinkingbox (RubricJudge's output)
TB_RUBRIC_METADATA = {
    "rubric_reward": 0.9,
    "rubric_scores": [
        {
            "criterion": "The message clearly confirms that file.txt was modified",
            "rating": 1,
            "score": 50.0,
        },
        {
            "criterion": "The message mentions that 'some more text' was appended",
            "rating": 1,
            "score": 50.0,
        },
        {"criterion": "The message claims the file was deleted", "rating": 0, "score": 0.0},
        {
            "criterion": "The message claims a different file was modified",
            "rating": 1,
            "score": 10.0,
        },
    ],
    "tool_calls_count": 3,
}


def status_of(result: bool, is_system_error: bool) -> str:
    return "error" if is_system_error else ("passed" if result else "failed")


def test_thinkingbox_example_dataset_runs_as_in_tb_infer() -> None:
    """dataset/test_case/cloud_drive.py: `RubricJudge` and `tc.tool_call.name` from the
    stand-in; every test's result and reward equal thinkingbox's on the same replies."""
    suite = cl.load(CORPUS / "thinkingbox/dataset/test_case/cloud_drive.py")
    run = cl.run(suite, "demo:cloud_drive", judge=rule_judge, simulator="scripted", progress=False)
    got = {r.case_id: r for r in run.results}
    assert set(got) == set(TB_DATASET)
    for cid, (result, reward, system_error) in TB_DATASET.items():
        [test] = [a for a in got[cid].assertions if a.kind == "python_test"]
        assert got[cid].status == status_of(result, system_error), (cid, test.message)
        assert test.score == reward, cid
    [rubric] = list(got["cloud_drive.py:test_append_some_more_text"].assertions)
    assert rubric.details["metadata"] == TB_RUBRIC_METADATA


# thinkingbox's TestCaseTags for examples/cloud_drive (hydrator.py `hydrate_test_case`):
# a function's `tags` mapping replaces the global one, as a shallow merge does
TB_EXAMPLE = {
    "cloud_drive.py:test_append_ok": ("passed", "misc", [], []),
    "cloud_drive.py:test_list_files": ("passed", None, [], ["read"]),
    "cloud_drive.py:test_ignores_instructions_in_files": (
        "passed",
        None,
        ["xpia"],
        ["safety", "prompt-injection"],
    ),
    "cloud_drive.py:test_delete_after_confirmation": ("passed", None, [], ["write"]),
    "cloud_drive.py:test_create_file": ("passed", None, [], ["write"]),
    "cloud_drive.py:test_delete_without_user": ("failed", None, [], ["write", "expected-failure"]),
}


def test_convlab_example_is_valid_and_passes_in_thinkingbox() -> None:
    """examples/cloud_drive: tags from thinkingbox's taxonomy (tag_types.py would reject
    `domain: files`), attribute access only, so it loads and passes in real thinkingbox."""
    taxonomy = yaml.safe_load(
        (CORPUS / "thinkingbox/dataset/tag_taxonomy.example.yaml").read_text()
    )
    suite = cl.load(EXAMPLE)
    run = cl.run(suite, "demo:cloud_drive", simulator="scripted", progress=False)
    for case in suite.cases:
        _status, domain, category, labels = TB_EXAMPLE[case.id]
        tags = case.metadata["tags"]
        assert (tags["domain"], tags["category"], tags["labels"]) == (domain, category, labels)
        assert domain is None or domain in taxonomy["domain"].values()
        assert all(c in taxonomy["category"].values() for c in category)
    assert {r.case_id: r.status for r in run.results} == {k: v[0] for k, v in TB_EXAMPLE.items()}


# ---------------------------------------------------------------- item 1: the test context


def context() -> CheckContext:
    obs = Observation(
        text="Done: file.txt now ends with 'more'.",
        tool_calls=[
            ToolCall(
                "get_text_content", '{"path": "a.txt"}', result={"text_content": "x"}, id="c1"
            ),
            ToolCall("upload_file", {"path": "a.txt"}, result="ok", id="c2"),
        ],
        effects={"cloud_drive": {"files": [{"path": "a.txt", "text_content": "x\nmore"}]}},
    )
    messages = [
        Message(role="user", content="append more"),
        Message(
            role="assistant",
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_text_content", "arguments": '{"path": "a.txt"}'},
                }
            ],
        ),
        Message(
            role="tool", name="get_text_content", tool_call_id="c1", content='{"text_content": "x"}'
        ),
        Message(role="assistant", content="Done: file.txt now ends with 'more'."),
    ]
    return CheckContext(observation=obs, messages=messages, scope="final")


def run_code(code: str, judge: Any = None, ctx: CheckContext | None = None) -> Any:
    code = textwrap.dedent(code)
    line = next(i for i, s in enumerate(code.splitlines(), 1) if s.startswith("def test_t("))
    spec = PythonTest(function="test_t", code=code, file="/virtual/t.py", line=line)
    ctx = ctx or context()
    ctx.judge = as_agent(judge) if judge is not None else None
    return asyncio.run(evaluate(spec, ctx))


def test_context_reads_as_thinkingbox_types_and_as_dicts() -> None:
    """chat_types.py `TestContext`: messages are Text/ParallelToolCall/ToolResponse and tool
    calls `ToolCallResponse`; convlab's item access (`c["name"]`) keeps working."""
    x = build_test_context(context())
    assert x.messages[0].content == "append more" and x.messages[0].T == "Text"
    assert x.messages[1].T == "ParallelToolCall"
    assert x.messages[1].tool_calls[0].name == "get_text_content"
    assert x.messages[1].tool_calls[0].arguments == {"path": "a.txt"}  # a dict, as in tb
    assert (x.messages[2].T, x.messages[2].id, x.messages[2].content) == (
        "ToolResponse",
        "c1",
        '{"text_content": "x"}',
    )
    assert x.tool_calls[0].tool_call.name == "get_text_content"
    assert x.tool_calls[0].tool_call.arguments == {"path": "a.txt"}
    assert x.tool_calls[0].tool_response.content == '{"text_content": "x"}'
    assert x.tool_calls[1].tool_response.content == "ok" and x.tool_calls[1].tool_call.id == "c2"
    assert x.tool_calls[1]["name"] == "upload_file" and x.messages[0]["role"] == "user"
    assert x.tool_direct_responses == []
    with pytest.raises(AttributeError, match="'Text' object has no attribute 'tool_calls'"):
        _ = x.messages[0].tool_calls
    hand = TestContext(messages=[{"role": "user", "content": "hi"}], tool_calls=[{"name": "a"}])
    assert hand.messages[0].content == "hi" and hand.tool_calls[0].tool_call.name == "a"


def test_a_thinkingbox_style_test_passes_without_thinkingbox() -> None:
    res = run_code(
        """
        from thinkingbox.common import Judge, TestContext
        from thinkingbox.common.chat_types import Text, ToolResponse

        def test_t(x: TestContext, judge: Judge):
            assert x.messages[0].content == "append more"
            assert [tc.tool_call.name for tc in x.tool_calls] == ["get_text_content", "upload_file"]
            assert "text_content" in x.tool_calls[0].tool_response.content
            said = [m.content for m in x.messages if isinstance(m, Text) and m.role == "assistant"]
            assert said == ["Done: file.txt now ends with 'more'."]
            assert sum(isinstance(m, ToolResponse) for m in x.messages) == 1
        """
    )
    assert res.status == "passed", res.message


# ---------------------------------------------------------------- item 2: RubricJudge

RUBRIC_TEST = """
from thinkingbox.common import Judge, TestContext
from thinkingbox.common.rubrics_judge import RubricJudge

def test_t(x: TestContext, judge: Judge):
    rj = RubricJudge(judge=judge, x=x, max_workers=2)
    rubrics = [
        rj.Config(criterion="A", weight=3),
        rj.Config(criterion="B", weight=1),
        rj.Config(criterion="P", weight=1, is_penalty=True),
        rj.Config(criterion="M", weight=0.25, is_penalty=True, penalty_type="multiplicative"),
    ]
    result = rj.evaluate(x.response, rubrics, global_threshold=THRESHOLD, throw_on_failure=THROW)
    x.metadata["passed"] = result.passed
    return result.reward
"""


# rubrics_judge.py `_compute_default_reward`, values from thinkingbox's RubricJudge with a
# judge answering YES to the criteria listed
@pytest.mark.parametrize(
    ("yes", "reward", "passed"),
    [
        ("AB", 1.0, True),
        ("A", 0.75, True),
        ("AP", 0.5, False),  # deduction: (3 - 1) / 4
        ("ABM", 0.75, True),  # multiplicative: 1.0 x (1 - 0.25)
        ("APM", 0.375, False),
        ("P", 0.0, False),  # clamped at 0
        ("", 0.0, False),
    ],
)
def test_rubric_judge_weights_and_penalties(yes: str, reward: float, passed: bool) -> None:
    def judge(messages: list[dict[str, Any]]) -> str:
        text = last_text(messages)
        return "YES" if any(f"<criterion>{c}</criterion>" in text for c in yes) else "NO"

    res = run_code(RUBRIC_TEST.replace("THRESHOLD", "0.7").replace("THROW", "False"), judge)
    assert res.status == "passed" and res.score == reward
    assert res.details["metadata"]["rubric_reward"] == reward
    assert res.details["metadata"]["passed"] is passed


def test_rubric_judge_threshold_and_config_errors() -> None:
    def yes_to_a(messages: list[dict[str, Any]]) -> str:
        return "YES" if "<criterion>A</criterion>" in last_text(messages) else "NO"

    res = run_code(RUBRIC_TEST.replace("THRESHOLD", "0.9").replace("THROW", "True"), yes_to_a)
    assert res.status == "failed" and res.message == "Reward 0.750 is below threshold 0.900"
    assert res.details["metadata"]["rubric_reward"] == 0.75  # written before the check
    bad = RUBRIC_TEST.replace("weight=0.25", "weight=1.5").replace("THRESHOLD", "0.7")
    res = run_code(bad.replace("THROW", "False"), yes_to_a)
    assert (
        res.status == "error"
        and "multiplicative penalty weight must be in [0.0, 1.0]" in res.message
    )


# ---------------------------------------------------------------- item 3: reward rules


# testrunner.py `TestScriptSubprocess.evaluate`: TestResult (reward: float, ge=0, le=1) is
# validated from the worker's JSON; values checked against thinkingbox's TestResult
@pytest.mark.parametrize(
    ("value", "status", "score"),
    [
        ('"abc"', "error", 0.0),
        ("2.5", "error", 0.0),
        ("-1", "error", 0.0),
        ('float("nan")', "error", 0.0),
        ("[0.5]", "error", 0.0),
        ("0.5", "passed", 0.5),
        ("0", "passed", 0.0),
        ("True", "passed", 1.0),
        ('"0.5"', "passed", 0.5),
    ],
)
def test_reward_must_be_a_number_from_0_to_1(value: str, status: str, score: float) -> None:
    res = run_code(f"def test_t(x, judge):\n    return {value}\n")
    assert (res.status, res.score) == (status, score)
    if status == "error":
        assert "a reward must be a number from 0 to 1" in res.message


def test_prints_to_stderr_are_captured() -> None:
    # testrunner.py `MockPrint` drops `file=`: everything printed is in TestResult.prints
    code = (
        "import sys\ndef test_t(x, judge):\n    print('out')\n    print('err', file=sys.stderr)\n"
    )
    assert run_code(code).details["prints"] == "out\nerr\n"


# ---------------------------------------------------------------- item 5: loading details


def dataset(tmp_path: Path, test_file: str, source: str, meta: str) -> Path:
    (tmp_path / "scenario").mkdir()
    (tmp_path / "scenario" / "s.yaml").write_text("world_state: {}\ntools: []\n")
    (tmp_path / "test_case").mkdir()
    (tmp_path / "test_case" / test_file).write_text(textwrap.dedent(source))
    (tmp_path / "test_case" / "name.meta.yaml").write_text(textwrap.dedent(meta))
    return tmp_path / "test_case" / test_file


META = """
$history:
  "#draft": [{T: Text, role: user, content: never read}]
  conv:
  - {T: Text, role: user, content: hello}
  - {T: Text, role: assistant, content: let me think, metadata: {tag: think}}
  - {T: Text, role: assistant, content: hi}
"""


def test_meta_file_of_a_versioned_test_file_and_history_rules(tmp_path: Path) -> None:
    """history_loader.py `MetaFile.load_for_test_file` (`with_suffix("")` then
    `.meta.yaml`: name.v2.py reads name.meta.yaml), `MetaFile.load` (`#` keys skipped) and
    `parse_messages` (think messages kept)."""
    path = dataset(
        tmp_path,
        "name.v2.py",
        '''
        """!
        scenario: s
        metadata: {owner: team-a, priority: 2}
        """

        def test_t(x, judge):
            """!
            query: go on
            history: "conv:0:"
            """
        ''',
        META,
    )
    [case] = cl.load(path).cases
    assert [(m.role, m.content) for m in case.input or []] == [
        ("user", "hello"),
        ("assistant", "let me think"),
        ("assistant", "hi"),
        ("user", "go on"),
    ]
    # hydrator.py `load_test_file`: TestCase(**config) takes a global `metadata:` block
    assert case.metadata["owner"] == "team-a" and case.metadata["priority"] == 2
    source = path.read_text().replace("conv:0:", "#draft:0:")
    path.write_text(source)
    with pytest.raises(cl.SuiteError, match=r"key '#draft' is not in the \$history"):
        cl.load(path)


def test_transcript_limit_keeps_the_last_assistant_messages() -> None:
    # chat_types.py `get_conversation_transcript`: limit=1 -> from the last assistant message on
    x = TestContext(
        messages=[
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2"},
        ]
    )
    assert "q1" not in x.transcript(limit=1) and "a2" in x.transcript(limit=1)
    assert "a1" in x.transcript(limit=2) and "q1" not in x.transcript(limit=2)
    assert "q1" in x.transcript() and x.transcript(limit=5) == x.transcript()
    with pytest.raises(ValueError, match="limit must be >= 0"):
        x.transcript(limit=-1)
