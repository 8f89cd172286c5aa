"""Text that is not Unicode (a lone UTF-16 surrogate) is refused where a suite file is read.

A JSON escape `"\\udcff"` (or YAML's, or a Python escape in a `!` docstring) decodes to half a
UTF-16 pair, which cannot be written as UTF-8: such a suite used to validate, then `convlab
run` exited 3 with an empty store. Every format now names the file, line and field, says "not
Unicode", and still reports every other problem; a surrogate PAIR (an emoji) loads.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import textwrap
from pathlib import Path

import pytest

import convlab as cl
from convlab.cli import main
from convlab.errors import Problem, SuiteError
from convlab.formats._base import Problems, yaml_with_lines
from convlab.formats._unicode import lone_json_escape, mend
from convlab.model.conversation import Message

TB_DATA = Path(__file__).parent / "data" / "tb_dataset"
LONE = "\\udcff"
"""The escape as written in a file (backslash, u, hex digits)."""
EMOJI = "\\ud83d\\ude00"
"""😀 as JSON writes it when it escapes non-ASCII: a high + low surrogate pair."""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems(path: Path) -> list[Problem]:
    with pytest.raises(SuiteError) as info:
        cl.load(path)
    return info.value.problems


def unicode_problems(path: Path) -> list[Problem]:
    found = [p for p in problems(path) if "not Unicode" in p.message]
    assert found, problems(path)
    for p in found:  # the message itself is text a terminal can print
        str(p).encode("utf-8")
        assert "\\udcff" in p.message or "lone surrogate" in p.message
    return found


def where(found: list[Problem]) -> list[tuple[str, int | None, str]]:
    return [(Path(p.file).name, p.line, p.path) for p in found]


# -- JSONL ----------------------------------------------------------------------------------------


def test_jsonl_lone_surrogate_names_file_line_and_field_and_keeps_other_problems(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "s.jsonl",
        f"""
        {{"id": "ok", "input": "hi"}}
        {{"id": "a{LONE}", "input": "hi", "asert": []}}
        {{"id": "b", "input": "fine {EMOJI}"}}
        {{
          "id": "c",
          "input": [{{"role": "user", "content": "x\\uDC00 and y\\ud800"}}],
          "assert": {{"type": "contains", "value": "{LONE}"}}
        }}
        """,
    )
    every = problems(path)
    found = [p for p in every if "not Unicode" in p.message]
    assert where(found) == [
        ("s.jsonl", 2, "id"),
        ("s.jsonl", 4, "input[0].content"),
        ("s.jsonl", 4, "assert.value"),
    ]
    assert "a lone surrogate \\udcff (a JSON escape of half a UTF-16 pair" in found[0].message
    assert "2 lone surrogates (first \\udc00)" in found[1].message
    # the bad value hides nothing else: the typo on the same line is still reported
    assert any(p.line == 2 and p.path == "asert" for p in every)
    assert len(every) == 4
    for p in every:
        str(p).encode("utf-8")


def test_jsonl_surrogate_pair_and_escaped_backslash_load(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        f'{{"id": "e", "input": "smile {EMOJI}", "expected": "\\\\udcff"}}\n',
    )
    case = cl.load(path).cases[0]
    assert case.input[0].content == "smile \U0001f600"
    assert case.assertions[0].value == "\\udcff"  # a backslash, then "udcff": plain text


def test_jsonl_key_and_pretty_printed_object(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        f"""
        // a comment
        {{
          "id": "k",
          "input": "hi",
          "metadata": {{"n{LONE}": 1}}
        }}
        """,
    )
    (found,) = unicode_problems(path)
    assert where([found]) == [("s.jsonl", 2, "metadata.n\ufffd")]
    assert "in this key" in found.message


def test_jsonl_text_given_directly_is_refused_too(tmp_path: Path) -> None:
    from convlab.formats.jsonl import load_jsonl

    with pytest.raises(SuiteError) as info:
        load_jsonl(tmp_path / "x.jsonl", f'{{"id": "x", "input": "a{LONE}"}}\n')
    (p,) = info.value.problems
    assert (p.line, p.path) == (1, "input") and "not Unicode" in p.message


# -- JSON evaluation suites -----------------------------------------------------------------------


def _suite_json(step_text: str, name: str = "Scenario") -> str:
    data = {
        "schemaVersion": 1,
        "id": "s",
        "name": "S",
        "scenarios": [
            {
                "id": "one",
                "name": name,
                "writePolicy": "read_only",
                "steps": [{"id": "st", "input": {"text": step_text}}],
            },
            {
                "id": "two",
                "name": "Two",
                "writePolicy": "sometimes",
                "steps": [{"id": "st", "input": {"text": "hello"}}],
            },
        ],
    }
    # placeholders become raw escapes in the text (json.dumps would double the backslash)
    return json.dumps(data, indent=2).replace("LONE", LONE).replace("EMOJI", EMOJI)


def test_suite_json_lone_surrogate_names_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", _suite_json("say LONE", name="N LONE"))
    every = problems(path)
    found = [p for p in every if "not Unicode" in p.message]
    text = path.read_text()
    line = text[: text.index(f"say {LONE}")].count("\n") + 1
    name_line = text[: text.index(f"N {LONE}")].count("\n") + 1
    assert where(found) == [
        ("s.json", name_line, "scenarios[0].name"),
        ("s.json", line, "scenarios[0].steps[0].input.text"),
    ]
    assert "a JSON escape of half a UTF-16 pair" in found[0].message
    # the other scenario's problem is still reported
    assert any(p.path == "scenarios[1].writePolicy" for p in every)


def test_suite_json_surrogate_pair_loads(tmp_path: Path) -> None:
    text = _suite_json("say EMOJI").replace('"sometimes"', '"read_only"')
    suite = cl.load(write(tmp_path / "s.json", text))
    assert suite.cases[0].turns[0].input.text == "say \U0001f600"


def test_native_json_lone_surrogate(tmp_path: Path) -> None:
    case = cl.Case(id="c", name="hi", input=[Message(role="user", content="yo")])
    text = cl.Suite(id="n", cases=[case]).to_json().replace('"hi"', f'"h{LONE}"')
    path = write(tmp_path / "n.json", text)
    (found,) = unicode_problems(path)
    assert (found.path, found.line) == ("cases[0].name", text[: text.index(LONE)].count("\n") + 1)


# -- YAML cases (HoloDeck) ------------------------------------------------------------------------


def test_yaml_cases_lone_surrogate_names_file_line_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / "agent.yaml",
        f"""
        name: a
        test_cases:
          - name: one
            input: "hello {LONE}"
            expected_tools: 3
          - name: two
            input: "\\U0000DCFF"
          - name: three
            input: "fine {EMOJI}"
        """,
    )
    every = problems(path)
    found = [p for p in every if "not Unicode" in p.message]
    assert where(found) == [
        ("agent.yaml", 4, "test_cases[0].input"),
        ("agent.yaml", 7, "test_cases[1].input"),
    ]
    assert "a YAML escape of half a UTF-16 pair" in found[0].message
    assert any(p.path.startswith("test_cases[0].expected_tools") for p in every), every


def test_yaml_cases_surrogate_pair_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path / "agent.yaml",
        f"""
        name: a
        test_cases:
          - name: "smile {EMOJI}"
            input: "fine {EMOJI}"
        """,
    )
    case = cl.load(path).cases[0]
    assert case.id == "smile \U0001f600" and case.input[0].content == "fine \U0001f600"


def test_yaml_key_with_lone_surrogate_keeps_its_line() -> None:
    found = Problems("f.yaml")
    data = yaml_with_lines(f'a: 1\nb:\n  "k{LONE}": 2\n', found)
    assert data == {"a": 1, "b": {"k\ufffd": 2}}
    assert data["b"].key_lines == {"k\ufffd": 3}
    assert [(p.line, p.path) for p in found] == [(3, "b.k\ufffd")]


def test_yaml_alias_is_mended_once() -> None:
    found = Problems("f.yaml")
    data = yaml_with_lines(f'base: &b ["x{LONE}"]\nc: *b\nd: *b\n', found)
    assert data["c"] is data["d"] and data["c"] == ["x\ufffd"]
    assert [(p.line, p.path) for p in found] == [(1, "base[0]")]


# -- Python tests (thinkingbox) -------------------------------------------------------------------


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "dataset"
    shutil.copytree(TB_DATA, root)
    return root


def test_python_docstring_yaml_escape_names_line_and_field(dataset: Path) -> None:
    path = write(
        dataset / "test_case" / "surr.py",
        f'''
        def test_one():
            r"""!
            scenario: my_scenario
            query: "hello {LONE}"
            max_user_sim_turns: many
            """


        def test_two():
            r"""!
            scenario: my_scenario
            query: "fine {EMOJI}"
            """
        ''',
    )
    every = problems(path)
    found = [p for p in every if "not Unicode" in p.message]
    assert where(found) == [("surr.py", 4, "query")]
    assert "a YAML escape of half a UTF-16 pair" in found[0].message
    assert any(p.path == "max_user_sim_turns" for p in every), every  # still checked


def test_python_string_escape_in_docstring(dataset: Path) -> None:
    # not a raw string: Python itself turns the escape into the surrogate
    path = write(
        dataset / "test_case" / "surr.py",
        f'''
        def test_one():
            """!
            scenario: my_scenario
            query: hello {LONE}
            """
        ''',
    )
    (found,) = unicode_problems(path)
    assert where([found]) == [("surr.py", 4, "query")]
    assert "written in the text itself, e.g. by a Python escape" in found.message


def test_python_surrogate_pair_loads(dataset: Path) -> None:
    path = write(
        dataset / "test_case" / "surr.py",
        f'''
        def test_one():
            """!
            scenario: my_scenario
            query: "fine {EMOJI}"
            """
        ''',
    )
    case = cl.load(path).cases[0]
    assert case.input[0].content == "fine \U0001f600"


def test_thinkingbox_yaml_cases_and_scenario_file(dataset: Path) -> None:
    scenario = dataset / "scenario" / "my_scenario.yaml"
    scenario.write_text(
        scenario.read_text() + f'\nbot_instructions: "be {LONE}"\n', encoding="utf-8"
    )
    path = write(
        dataset / "test_case" / "surr_cases.yaml",
        f"""
        test_cases:
          - uid: one
            scenario: my_scenario
            query: "q {LONE}"
            test_code: |
              def test_one():
                  pass
        """,
    )
    found = unicode_problems(path)
    assert ("surr_cases.yaml", 4, "test_cases[0].query") in where(found)
    assert any(
        Path(p.file).name == "my_scenario.yaml" and p.path == "bot_instructions" for p in found
    )


# -- the CLI --------------------------------------------------------------------------------------


def test_cli_validate_and_run_refuse_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "s.jsonl", f'{{"id": "a", "input": "hi {LONE}"}}\n')
    assert main(["validate", str(path)]) != 0
    err = capsys.readouterr().err
    assert f"{path}:1: input: not Unicode text" in err
    store = tmp_path / "out.jsonl"
    assert main(["run", "-i", str(path), "-n", "demo:finance", "-o", str(store)]) == 2
    assert "not Unicode text" in capsys.readouterr().err
    assert not store.exists()


# -- the walk itself ------------------------------------------------------------------------------


def test_mend_joins_pairs_replaces_halves_and_keeps_order() -> None:
    seen: list[tuple[tuple[int | str, ...], str]] = []
    data = {"a": ["\ud83d\ude00", "\ude00\ud83d"], "b\udcff": {"c": ("x\ud800",)}, "d": 1}
    out = mend(data, lambda loc, m: seen.append((loc, m)), "JSON")
    assert out is data
    assert list(data) == ["a", "b\ufffd", "d"]
    assert data["a"] == ["\U0001f600", "\ufffd\ufffd"] and data["b\ufffd"] == {"c": ("x\ufffd",)}
    assert [loc for loc, _ in seen] == [("a", 1), ("b\ufffd",), ("b\ufffd", "c", 0)]


def test_lone_json_escape_finds_every_json_text_that_decodes_to_a_lone_surrogate() -> None:
    """It gates the walk: a miss would let a lone surrogate through; a pair or an escaped
    backslash before `udcff` must not start the walk either."""
    atoms = ["\\\\", "\\ud83d", "\\ude00", "\\uDBFF", "\\uDC00", "a", "\\u0041", "ud83d", "\\ud7ff"]
    rng = random.Random(7)
    for _ in range(20_000):
        text = json.dumps({"k": ""})[:-2] + "".join(rng.choices(atoms, k=rng.randint(0, 6))) + '"}'
        lone = re.search("[\ud800-\udfff]", json.loads(text)["k"]) is not None
        assert lone_json_escape(text) is lone, text
