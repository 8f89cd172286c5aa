"""The loader plumbing every format shares (`convlab.formats._base`).

One did-you-mean, one JSON type name, one `plain()`, one collector pause and one YAML
line loader serve all formats; each format keeps its own wording through parameters, so
the messages users see are those the format tests pin.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import DATA

import convlab
from convlab._readable import json_type
from convlab.errors import SuiteError
from convlab.formats import _base
from convlab.formats._base import (
    LineDict,
    LineList,
    Problems,
    closest_name,
    did_you_mean,
    gc_paused,
    plain,
    yaml_with_lines,
)

# -- did you mean --------------------------------------------------------------------------------


def test_the_closest_name_or_none() -> None:
    assert closest_name("asert", ["input", "assert", "id"]) == "assert"
    assert closest_name("zzz", ["input", "assert"]) is None
    assert closest_name(3, ["3a", "b"]) == "3a"  # any value is compared as text


def test_fold_finds_a_snake_case_spelling_of_a_camel_case_name() -> None:
    assert closest_name("schema-version", ["schemaVersion", "scenarios"], fold=True) == (
        "schemaVersion"
    )
    assert closest_name("OPTIONINDEX", ["optionIndex"]) is None  # difflib alone misses it
    assert closest_name("OPTIONINDEX", ["optionIndex"], fold=True) == "optionIndex"


def test_each_formats_wording_of_a_hint() -> None:
    from convlab.formats._suite_json_check import HINT as SUITE_JSON
    from convlab.formats._yaml_common import HINT as YAML

    assert did_you_mean("requried", ("id", "required")) == " Did you mean 'required'?"
    assert did_you_mean("inputt", ["input"], YAML) == "; did you mean 'input'?"
    assert did_you_mean("equal", ("equals",), SUITE_JSON, fold=True) == (
        " (did you mean 'equals'?)"
    )
    assert did_you_mean("zzz", ("id",)) == ""


def test_a_suite_json_snake_case_field_is_pointed_to_its_camel_case_name(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        '{"schemaVersion": 1, "id": "s", "name": "S", "scenarios": [{"id": "a", "name": "A",\n'
        '"skip_reason": "x", "writePolicy": "read_only",\n'
        '"steps": [{"id": "s1", "input": {"text": "hi"}}]}]}\n'
    )
    with pytest.raises(SuiteError) as info:
        convlab.load(path)
    (problem,) = info.value.problems
    assert problem.line == 2 and problem.path == "scenarios[0].skip_reason"
    assert problem.message.startswith("unknown field 'skip_reason' (did you mean 'skipReason'?)")


# -- JSON type names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),
        (3, "number"),
        (2.5, "number"),
        ("x", "string"),
        ([1], "array"),
        ((1,), "array"),
        ({"a": 1}, "object"),
        ({1, 2}, "set"),  # not JSON (a convlab.check() dict): its Python type
    ],
)
def test_json_type_names_what_a_person_wrote(value: Any, name: str) -> None:
    assert json_type(value) == name


# -- plain data ----------------------------------------------------------------------------------


def test_plain_drops_line_bookkeeping_and_keeps_shared_aliases_shared() -> None:
    problems = Problems("f.yaml")
    data = yaml_with_lines("base: &b {x: [1, 2]}\na: *b\nb: *b\n", problems)
    assert isinstance(data, LineDict) and isinstance(data["a"]["x"], LineList)
    copy = plain(data)
    assert copy == {"base": {"x": [1, 2]}, "a": {"x": [1, 2]}, "b": {"x": [1, 2]}}
    assert type(copy) is dict and type(copy["a"]) is dict and type(copy["a"]["x"]) is list
    assert copy["a"] is copy["b"]  # an alias bomb stays linear


# -- the YAML line loader ------------------------------------------------------------------------


def _shape(node: Any) -> Any:
    """Data with every line number the loader recorded."""
    if isinstance(node, LineDict):
        return ("map", node.line, [(k, node.key_lines[k], _shape(v)) for k, v in node.items()])
    if isinstance(node, LineList):
        return ("seq", node.line, node.item_lines, [_shape(v) for v in node])
    return node


def _corpus_yaml() -> Iterator[Path]:
    """Every YAML file under tests/data: the real suites of tests/data/corpus among them."""
    yield from (p for p in DATA.rglob("*") if p.suffix in (".yaml", ".yml"))


def test_libyaml_gives_the_same_data_and_lines_as_the_pure_python_parser() -> None:
    files = list(_corpus_yaml())
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        try:
            pure = _shape(yaml.load(text, Loader=_base._LineLoader))
        except yaml.YAMLError:
            continue
        assert _shape(yaml_with_lines(text, Problems(str(path)))) == pure, path


def test_timestamps_stay_text() -> None:
    problems = Problems("f.yaml")
    assert yaml_with_lines("when: 2020-01-02\nat: 2020-01-02 10:00:00\n", problems) == {
        "when": "2020-01-02",
        "at": "2020-01-02 10:00:00",
    }
    assert not problems


def test_a_syntax_error_is_worded_and_placed_by_the_pure_python_parser() -> None:
    problems = Problems("f.yaml")
    assert yaml_with_lines("a: 1\nb: [1, 2\nc: 3\n", problems) is None
    assert [str(p) for p in problems] == [
        "f.yaml:3: invalid YAML: expected ',' or ']', but got ':'"
    ]
    problems = Problems("f.yaml")
    assert yaml_with_lines("when: 2020-13-45T00:00:00\nbad: 2020-13-45\n", problems) == {
        "when": "2020-13-45T00:00:00",
        "bad": "2020-13-45",
    }


def test_a_text_only_libyaml_rejects_still_loads() -> None:
    # libyaml refuses a flow mapping's empty last value; PyYAML (and so convlab) accepted it
    problems = Problems("f.yaml")
    assert yaml_with_lines("{a: {}, b:}\n", problems) == {"a": {}, "b": None}
    assert not problems


# -- the collector pause -------------------------------------------------------------------------


@pytest.fixture
def collector() -> Iterator[None]:
    """Runs a test with the collector on, and puts back what the test changed."""
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()
        (gc.enable if enabled else gc.disable)()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


@pytest.mark.usefixtures("collector")
def test_a_load_pauses_the_collector_then_ages_what_it_built() -> None:
    with gc_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(10)]
    assert gc.isenabled()
    assert _in_generation(built, 2)  # not walked again as a young object
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("collector")
def test_the_hosts_own_frozen_objects_and_a_disabled_collector_are_left_alone() -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    with gc_paused():
        built = [[1]]
    assert gc.get_freeze_count() == frozen and built
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_the_collector_is_back_on_after_a_load_that_fails(tmp_path: Path) -> None:
    for name, text in (
        ("a.jsonl", '{"id": 1}\n'),
        ("b.json", '{"schemaVersion": 1, "scenarios": 1}'),
    ):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(SuiteError):
            convlab.load(path)
        assert gc.isenabled()
