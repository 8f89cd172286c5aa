"""thinkingbox's loader and test runner on edge cases, side by side with convlab.

Each expected value is what thinkingbox itself (microsoft/thinkingbox@dafead8a) gave on the
same file, run in a separate environment: its loader (common/hydrator.py
`iter_cases_from_test_case_file`, `iter_cases_by_names`, common/python_test_file.py
`iter_test_functions`, common/config_types.py `TestCase`), then `merge_init_config` and
`TestScript.evaluate_sync` (common/testrunner.py) on each loaded test. Where convlab keeps a
behaviour of its own on purpose, the test asserts convlab's and says thinkingbox's, and
docs/thinkingbox.md's table of deliberate differences has the row (checked at the end).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.errors import SuiteError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A thinkingbox dataset: scenario `s` configures server `srv` with a list."""
    (tmp_path / "scenario").mkdir()
    (tmp_path / "test_case").mkdir()
    (tmp_path / "scenario" / "s.yaml").write_text(
        "world_state:\n  srv: [1, 2]\n  other: {a: 1}\ntools: []\n", encoding="utf-8"
    )
    return tmp_path


def write(dataset: Path, name: str, text: str) -> Path:
    path = dataset / "test_case" / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(SuiteError) as info:
        cl.load(path)
    return [f"{p.line}: {p.path}: {p.message}" for p in info.value.problems]


def tool_agent(messages: list[dict[str, Any]]) -> cl.Reply:
    return cl.Reply(text="r", tool_calls=[cl.ToolCall("t", {"a": 1}, "done")])


def outcomes(path: Path) -> dict[str, tuple[str, str]]:
    run = cl.run(path, tool_agent, progress=False, retries=0)
    return {r.case_id.split(":")[1]: (r.status, r.error or "") for r in run.results}


def one_test(yaml: str, body: str = "pass") -> str:
    """A file with one test `test_t` whose own `!` YAML is `query: q` plus `yaml`."""
    lines = "\n".join("    " + line for line in ["query: q", *yaml.splitlines()])
    head = '"""!\nscenario: s\n"""\n\n\ndef test_t(x, judge):\n'
    return f'{head}    """!\n{lines}\n    """\n    {body}\n'


# ------------------------------------------------------------ matched: the loader


@pytest.mark.parametrize(
    ("given", "user", "agent"),
    [
        ('"3"', 3, 3),
        ("3.0", 3, 3),
        ("true", 1, 1),
        ("false", 0, 0),
        ("7", 7, 7),
    ],
)
def test_turn_limits_read_as_testcase_reads_them(
    dataset: Path, given: str, user: int, agent: int
) -> None:
    # config_types.py `TestCase`: `max_user_sim_turns: int`, `max_agent_sim_turns: int
    # (ge=0)`, validated by pydantic in lax mode: "3" -> 3, 3.0 -> 3, true -> 1
    path = write(
        dataset,
        "turns.py",
        one_test(f"max_user_sim_turns: {given}\nmax_agent_sim_turns: {given}"),
    )
    (case,) = cl.load(path).cases
    assert (case.limits.max_user_turns, case.limits.max_agent_passes) == (user, agent)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("null", ["max_user_sim_turns: must be a whole number, got null"]),
        ("2.5", ["max_user_sim_turns: must be a whole number, got a number"]),
        ('"x"', ["max_user_sim_turns: must be a whole number, got a string"]),
    ],
)
def test_turn_limits_testcase_refuses_are_refused(
    dataset: Path, given: str, expected: list[str]
) -> None:
    # TestCase refuses null (the field is not Optional), 2.5 and "x" with a ValidationError
    path = write(dataset, "turns.py", one_test(f"max_user_sim_turns: {given}"))
    assert [p.split(": ", 1)[1] for p in problems(path)] == expected


def test_a_negative_user_turn_limit_is_no_simulated_user(dataset: Path) -> None:
    # `max_user_sim_turns` has no bound in TestCase; agent_user_loop.py stops the user
    # simulator when `turn > max_user_sim_turns`, so -1 allows none, as 0 does.
    # `max_agent_sim_turns` is `Field(ge=0)`: -1 is refused.
    path = write(dataset, "neg.py", one_test("max_user_sim_turns: -1"))
    assert cl.load(path).cases[0].limits.max_user_turns == 0
    path = write(dataset, "neg.py", one_test("max_agent_sim_turns: -1"))
    assert [p.split(": ", 1)[1] for p in problems(path)] == [
        "max_agent_sim_turns: must be >= 0, got -1"
    ]


@pytest.mark.parametrize(
    ("given", "value"),
    [
        *[("true", True), ('"yes"', True), ('"on"', True), ('"1"', True), ("1", True)],
        *[('"no"', False), ("0", False), ("false", False)],
    ],
)
def test_format_query_reads_as_testcase_reads_it(dataset: Path, given: str, value: bool) -> None:
    # TestCase `format_query: bool`: pydantic's lax booleans
    path = write(dataset, "fq.py", one_test(f"format_query: {given}"))
    assert cl.load(path).cases[0].metadata["format_query"] is value


@pytest.mark.parametrize(
    ("given", "kind"), [("null", "null"), ("2", "a number"), ('"maybe"', "a string")]
)
def test_format_query_testcase_refuses_is_refused(dataset: Path, given: str, kind: str) -> None:
    path = write(dataset, "fq.py", one_test(f"format_query: {given}"))
    assert [p.split(": ", 1)[1] for p in problems(path)] == [
        f"format_query: must be true or false, got {kind}"
    ]


def test_an_eval_tag_leaves_eval_type_null(dataset: Path) -> None:
    # hydrator.py `hydrate_test_case` builds the hydrated tags from labels, domain, category
    # and skip: an `eval:` tag (module-level or the test's own) leaves `eval_type` null
    path = write(
        dataset,
        "evaltag.py",
        '''
        """!
        scenario: s
        tags: ["eval:orchestration:tool-selection", "domain:misc", "lab"]
        """


        def test_e(x, judge):
            """!
            query: q
            tags: ["eval:knowledge-qa:text"]
            """
        ''',
    )
    (case,) = cl.load(path).cases
    tags = case.metadata["tags"]
    assert (tags["eval_type"], tags["domain"], tags["labels"]) == (None, "misc", ["lab"])
    assert "eval:knowledge-qa:text" in case.tags  # still there to select cases by


@pytest.mark.parametrize("key", ["uid", "test_code"])
def test_uid_in_a_module_block_is_refused(dataset: Path, key: str) -> None:
    # hydrator.py `load_test_file`: `TestCase(uid=fn.name, test_code=fn.test_code,
    # **fn.config)` with `uid` (or `test_code`) in the module-level config: a TypeError
    # ("got multiple values for keyword argument 'uid'"), the file does not load
    path = write(
        dataset,
        "uidmod.py",
        f'"""!\nscenario: s\n{key}: other\n"""\n\n\ndef test_u(x, judge):\n'
        '    """!\n    query: q\n    """\n',
    )
    assert problems(path) == [
        f"3: {key}: a module-level `!` block cannot set {key!r}: thinkingbox sets it from the "
        "test itself, so `TestCase(**config)` gets it twice (a TypeError)"
    ]


def test_an_unknown_key_in_a_yaml_test_case_is_ignored(dataset: Path) -> None:
    # TestCaseFile(**yaml) -> TestCase: pydantic ignores extra keys
    path = write(
        dataset,
        "cases.yaml",
        """
        test_cases:
          - uid: c1
            scenario: s
            query: q
            test_code: "def f(x, judge):\\n    pass\\n__tb_test_fn = f\\n"
            description: not a field
            whatever: 3
        """,
    )
    assert [c.id for c in cl.load(path).cases] == ["cases.yaml:c1"]
    assert outcomes(path) == {"c1": ("passed", "")}


def test_a_test_defined_twice_is_the_later_one_in_the_earlier_place(dataset: Path) -> None:
    # python_test_file.py `iter_test_functions` keeps tests in a dict by name: the later
    # definition's config and lines, at the earlier one's position
    path = write(
        dataset,
        "twice.py",
        '''
        """!
        scenario: s
        """


        def test_d(x, judge):
            """!
            query: first
            """


        def test_other(x, judge):
            """!
            query: other
            """


        def test_d(x, judge):
            """!
            query: second
            """
            assert False, "second"
        ''',
    )
    suite = cl.load(path)
    assert [(c.id, c.input[-1].content) for c in suite.cases] == [
        ("twice.py:test_d", "second"),
        ("twice.py:test_other", "other"),
    ]
    assert outcomes(path) == {
        "test_d": ("failed", "python_test: second"),
        "test_other": ("passed", ""),
    }


# ------------------------------------------------------------ documented differences


def test_test_functions_with_fewer_parameters_run(dataset: Path) -> None:
    # thinkingbox calls `__tb_test_fn(**{"x": ..., "judge": ...})` (testrunner.py
    # `TestScript`): `def test_only_x(x)` and `def test_no_params()` are a TypeError there
    # ("got an unexpected keyword argument"), a system error in every run. convlab passes
    # only the parameters the function names (docs/thinkingbox.md, differences table).
    path = write(
        dataset,
        "sig.py",
        '''
        """!
        scenario: s
        """


        def test_only_x(x):
            """!
            query: q
            """
            assert x.response == "r"


        def test_no_params():
            """!
            query: q
            """
        ''',
    )
    assert outcomes(path) == {"test_only_x": ("passed", ""), "test_no_params": ("passed", "")}


def test_a_decorator_stays_with_its_test(dataset: Path) -> None:
    # thinkingbox blanks a test from its `def` line, so `@deco` stays in every other test's
    # code: after the last test it is a SyntaxError there (test_plain: a system error); on
    # the test itself it applies (test_decorated fails with the decorator's AssertionError).
    # convlab blanks the decorator with its test and keeps it on the test itself.
    path = write(
        dataset,
        "deco.py",
        '''
        """!
        scenario: s
        """


        def deco(f):
            def wrapped(**kw):
                raise AssertionError("decorated")
            return wrapped


        def test_plain(x, judge):
            """!
            query: q
            """


        @deco
        def test_decorated(x, judge):
            """!
            query: q
            """
        ''',
    )
    assert outcomes(path) == {
        "test_plain": ("passed", ""),
        "test_decorated": ("failed", "python_test: decorated"),
    }


def test_item_access_on_tool_calls_and_messages_works(dataset: Path) -> None:
    # chat_types.py `ToolCallResponse` and the message types are pydantic models: in
    # thinkingbox `x.tool_calls[0]["name"]` is a TypeError ("not subscriptable"), a system
    # error. convlab's records are dicts too, so both spellings work.
    body = (
        'assert x.tool_calls[0]["name"] == x.tool_calls[0].tool_call.name == "t"; '
        'assert x.messages[0]["role"] == x.messages[0].role == "user"'
    )
    path = write(dataset, "item.py", one_test("", body))
    assert outcomes(path) == {"test_t": ("passed", "")}


def test_a_list_world_under_a_mapping_init_is_refused_at_load(dataset: Path) -> None:
    # config_types.py `merge_init_config` -> recursive_merge.py `recursive_merge` asserts
    # `a must be a dict, found <class 'list'>` when `tb infer` runs the test: the file loads
    # and every run of that test is a decoding error. convlab refuses it at load.
    path = write(dataset, "world.py", one_test("init:\n  srv: {a: 1}\n  other: {b: 2}"))
    assert problems(path) == [
        "10: init.srv: cannot be merged into scenario 's', whose 'srv' is a list, not a mapping "
        "(thinkingbox's recursive_merge asserts both are mappings: every run of this test "
        "would be a decoding error there)"
    ]


def test_a_list_naming_a_skipped_test_skips_it(dataset: Path) -> None:
    # hydrator.py `iter_cases_by_names` (strict): the skipped test is filtered at load, then
    # not found: FileNotFoundError("skipped.py:test_s"), the whole list fails. convlab loads
    # the list and reports the test as skipped.
    write(
        dataset,
        "skipped.py",
        '''
        """!
        scenario: s
        """


        def test_s(x, judge):
            """!
            query: q
            tags: [skip]
            """


        def test_k(x, judge):
            """!
            query: q
            """
        ''',
    )
    listed = dataset / "list.yaml"
    listed.write_text("- skipped.py:test_s\n- skipped.py:test_k\n", encoding="utf-8")
    assert outcomes(listed) == {"test_s": ("skipped", "tagged skip"), "test_k": ("passed", "")}


DOCUMENTED = [
    "| `def test(x)` or `def test()`",
    "| a decorator on a test function",
    '| item access: `x.tool_calls[0]["name"]`',
    "| a test's `init` for a server the scenario sets to a list",
    "| a test list naming a test tagged `skip`",
    "| a judge call or a connection that fails, a timeout",
]


def test_each_kept_difference_is_in_the_docs_table() -> None:
    text = (ROOT / "docs" / "thinkingbox.md").read_text(encoding="utf-8")
    table = text[text.index("## Deliberate differences") :]
    missing = [row for row in DOCUMENTED if row not in table]
    assert not missing, missing
