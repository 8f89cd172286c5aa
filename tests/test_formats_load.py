"""load() across formats: folders with other files, native errors, dates, pickling."""

from __future__ import annotations

import pickle
import shutil
import textwrap
from pathlib import Path

import pytest

import convlab as cl
from convlab.errors import AgentHTTPError, Problem, SuiteError, UnknownNameError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_a_folder_with_images_and_readmes_loads(tmp_path):
    folder = tmp_path / "expense"
    shutil.copytree(EXAMPLES / "expense", folder)
    (folder / "receipt.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    (folder / "notes.txt").write_text("not a suite")
    assert len(cl.load(folder).cases) == len(cl.load(EXAMPLES / "expense").cases)
    assert len(cl.load(folder, format="jsonl").cases) == len(cl.load(folder).cases)


def test_a_results_store_inside_the_suite_folder_is_not_a_suite(tmp_path):
    folder = tmp_path / "drive"
    shutil.copytree(EXAMPLES / "cloud_drive", folder)
    suite = cl.load(folder)
    cl.run(suite, "demo:cloud_drive", store=folder / "results.jsonl", progress=False)
    assert len((folder / "results.jsonl").read_text().splitlines()[0]) > 20_000
    assert [c.id for c in cl.load(folder).cases] == [c.id for c in suite.cases]


def test_a_regex_too_big_to_compile_is_a_suite_error(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text(
        '{"id": "a", "input": "x", "assert": {"type": "regex", "value": "a{99999999999}"}}\n'
    )
    with pytest.raises(SuiteError, match="cannot compile regex"):
        cl.load(f)


def test_native_errors_name_the_field_as_written_and_its_line(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(
        textwrap.dedent("""\
        convlab_suite: 1
        id: s
        cases:
        - id: a
          input:
          - content: hi
          assertions:
          - kind: regex
            pattern: "("
          - kind: check
            path: [response]
            operator: between
            value: 1
        - id: a
          input:
          - content: again
        """)
    )
    with pytest.raises(SuiteError) as err:
        cl.load(f)
    lines = str(err.value).splitlines()
    assert any(
        x.startswith(f"{f}:9: cases[0].assertions[0].pattern: cannot compile") for x in lines
    )
    assert any(x.startswith(f"{f}:12: cases[0].assertions[1].operator:") for x in lines)
    assert any(x.startswith(f"{f}:14: cases[1].id: duplicate case id 'a'") for x in lines)


def test_yaml_dates_stay_text_so_the_native_form_round_trips(tmp_path):
    f = tmp_path / "agent.yaml"
    f.write_text(
        textwrap.dedent("""\
        test_cases:
          - name: dated
            turns:
              - input: "book it"
                expected_tools:
                  - name: book
                    args: {date: 2025-06-22}
        """)
    )
    suite = cl.load(f)
    matcher = suite.cases[0].turns[0].assertions[0].tools[0].args["date"]
    assert matcher.value == "2025-06-22"
    again = tmp_path / "again.yaml"
    again.write_text(suite.to_yaml())
    assert cl.load(again).cases == suite.cases


def test_errors_survive_pickling():
    for err in (
        SuiteError([Problem("f.jsonl", 3, "assert.value", "bad")]),
        UnknownNameError("assertion kind", "contians", ["contains"], ["contains", "regex"]),
        AgentHTTPError(429, "http://127.0.0.1/v1", "slow down", retry_after=1.5),
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)


@pytest.mark.parametrize(
    ("text", "line", "found"),
    [
        ("hello world\n", 1, "a single scalar, text 'hello world'"),
        ("# a suite\n42\n", 2, "a single scalar, a number '42'"),
        ("!custom {a: 1}\n", 1, "tagged '!custom'"),
        ("!!python/object:os.system {}\n", 1, "tagged '!!python/object:os.system'"),
    ],
)
def test_a_yaml_file_whose_top_level_is_a_scalar_or_a_tag_says_so(tmp_path, text, line, found):
    """Not "not a recognised suite file": the file, the line, what was found there and
    what a suite file looks like."""
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    with pytest.raises(SuiteError) as info:
        cl.load(path)
    message = str(info.value)
    assert f"{path}:{line}: the top level is {found}" in message
    assert "test_cases:" in message and "not a recognised" not in message
