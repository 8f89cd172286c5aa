"""Hostile and careless input files: every loader ends in a
clear SuiteError, quickly and in bounded memory, and loading or validating runs no user code.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convlab
from convlab.checks import CheckContext, evaluate
from convlab.errors import SuiteError
from convlab.model.records import Observation

SECONDS = 2.0
MEGABYTES = 500


@contextmanager
def bounded(seconds: float = SECONDS, megabytes: int = MEGABYTES) -> Iterator[None]:
    """Fail unless the block uses at most `seconds` of CPU and `megabytes` at peak.

    CPU time of this process, not wall time: the bound is on what the loader costs, which a
    busy machine's scheduler does not change (wall time flaked at 2.16 s under load).
    """
    tracemalloc.start()
    start = time.process_time()
    try:
        yield
    finally:
        took = time.process_time() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert took < seconds, f"took {took:.2f} s of CPU"
    assert peak < megabytes * 1_000_000, f"peaked at {peak / 1e6:.0f} MB"


def bomb(levels: int, width: int = 9, indent: str = "    ") -> str:
    """A YAML alias bomb as block mapping lines: `a<levels>` expands to width**levels items."""
    lines = [f"a0: &a0 [{', '.join(['l'] * width)}]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "".join(f"{indent}{line}\n" for line in lines)


def agent_yaml(field: str, levels: int) -> str:
    """An agent.yaml whose one test case carries a bomb in `field`."""
    return (
        "name: agent\ntest_cases:\n  - name: bomb\n    input: hi\n"
        f"    {field}:\n{bomb(levels, indent='      ')}"
    )


def problems_of(path: Path, check: Callable[[], object] | None = None) -> SuiteError:
    """The SuiteError loading `path` raises, within the time and memory bounds."""
    with bounded(), pytest.raises(SuiteError) as info:
        (check or (lambda: convlab.load(path)))()
    return info.value


# ------------------------------------------------------------ Input 1: YAML alias bombs


def test_the_520_byte_alias_bomb_in_ground_truth_fails_at_once(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(agent_yaml("ground_truth", 8))
    assert len(path.read_bytes()) < 600
    err = problems_of(path)
    [problem] = err.problems
    assert problem.file == str(path)
    assert problem.line == 7  # the first alias
    assert "too big once its aliases" in problem.message


@pytest.mark.parametrize("field", ["ground_truth", "input", "retrieval_context"])
def test_a_bomb_in_a_field_that_otherwise_validates_is_refused(tmp_path: Path, field: str) -> None:
    # 7 levels: 4.8 million values once expanded, over the 1 million budget
    path = tmp_path / "agent.yaml"
    path.write_text(agent_yaml(field, 7))
    err = problems_of(path)
    assert "an alias bomb?" in str(err)


@pytest.mark.parametrize(
    "where",
    [
        "metadata:\n  extra:\n{bomb}test_cases:\n  - name: t\n    input: hi\n",
        "test_cases:\n  - name: t\n    input: hi\n    expected_tools:\n"
        "      - name: search\n        args:\n{bomb}",
    ],
    ids=["agent-metadata", "expected-tools-args"],
)
def test_a_bomb_where_it_validates_is_refused_at_load(tmp_path: Path, where: str) -> None:
    # HoloDeck keeps agent settings and tool args as written: before, these loaded and the
    # run then wrote the expanded value (572 MB) into the store header
    path = tmp_path / "agent.yaml"
    path.write_text("name: agent\n" + where.format(bomb=bomb(7, indent="          ")))
    assert "too big once its aliases" in str(problems_of(path))


def test_a_small_shared_alias_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: agent\nmetadata:\n"
        + bomb(3, width=3, indent="  ")
        + "test_cases:\n  - name: t\n    input: hi\n"
    )
    suite = convlab.load(path)
    assert len(suite.metadata["metadata"]["a3"]) == 3


def test_a_recursive_alias_is_a_problem_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("name: agent\ntest_cases:\n  - name: t\n    input: hi\n    metadata: &m [*m]\n")
    err = problems_of(path)
    assert "recursive alias" in str(err)
    assert err.problems[0].line == 5


@pytest.mark.parametrize("name", ["agent.yaml", "tests.yml"])
def test_a_yaml_file_over_the_size_limit_is_refused_unread(tmp_path: Path, name: str) -> None:
    from convlab.formats._base import MAX_YAML_CHARS

    path = tmp_path / name
    path.write_text("test_cases:\n  - input: hi\n    description: " + "x" * MAX_YAML_CHARS + "\n")
    err = problems_of(path)
    assert "file too big" in str(err)
    assert err.problems[0].file == str(path)


def test_a_wrong_type_message_never_reprs_the_whole_value(tmp_path: Path) -> None:
    from convlab.formats._yaml_common import type_error

    value: list[object] = ["lol"]
    for _ in range(40):  # 9**40 items once walked: repr() would never end
        value = [value] * 9
    with bounded(seconds=0.5, megabytes=5):
        message = type_error("string", value)
    assert len(message) < 200


# ------------------------------------------- Input 2: nothing runs at load or validate


def grader_suite(tmp_path: Path) -> tuple[Path, Path, str]:
    """An agent.yaml with a `type: code` grader in a package beside it whose import leaves a
    marker file: (agent.yaml, marker, module name)."""
    name = f"hostile_{uuid.uuid4().hex[:10]}"
    package = tmp_path / name
    package.mkdir()
    marker = tmp_path / "ran.txt"
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write('init ')\n")
    (package / "grade.py").write_text(
        f"open({str(marker)!r}, 'a').write('module ')\n"
        "def score(ctx):\n    return ctx.agent_response == 'yes'\n"
    )
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: agent\ntest_cases:\n  - name: t\n    input: hi\n"
        f"    evaluations: [{{type: code, grader: '{name}.grade:score'}}]\n"
    )
    return path, marker, name


def test_load_resolves_a_grader_by_path_and_runs_none_of_its_code(tmp_path: Path) -> None:
    path, marker, name = grader_suite(tmp_path)
    before = list(sys.path)
    suite = convlab.load(path)
    assert not marker.exists()
    assert name not in sys.modules and f"{name}.grade" not in sys.modules
    assert sys.path == before
    [grader] = suite.cases[0].assertions
    # the run imports it, from the agent.yaml's folder, and only then
    ctx = CheckContext(observation=Observation(text="yes"), case=suite.cases[0])
    result = asyncio.run(evaluate(grader, ctx))
    assert result.status == "passed", result.message
    assert marker.read_text() == "init module "
    assert sys.path == before


def test_validate_runs_no_user_code(tmp_path: Path) -> None:
    path, marker, _ = grader_suite(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "convlab", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists()


def test_a_grader_module_that_is_nowhere_is_still_a_load_problem(tmp_path: Path) -> None:
    path, _, name = grader_suite(tmp_path)
    path.write_text(path.read_text().replace(name, "nowhere_zz_" + name))
    err = problems_of(path)
    assert "cannot import module" in str(err)


# ------------------------------------------------- Input 5: silent or vague problems


def test_a_non_utf8_jsonl_in_a_folder_is_a_problem_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "good.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "b", "input": "hi"}\n\n{"id": "c", "input": "caf\xe9"}\n')
    err = problems_of(tmp_path)
    [problem] = err.problems
    assert (problem.file, problem.line) == (str(bad), 3)
    assert problem.message.startswith("not UTF-8 text")
    assert "byte 53, 0xe9" in problem.message


def test_a_non_utf8_file_after_a_bom_names_the_right_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "input": "hi"}\n{"id": "\xff"}\n')
    [problem] = problems_of(path).problems
    assert problem.line == 2


def test_a_latin1_helper_module_beside_suites_is_still_skipped(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "helper.py").write_bytes(b"# caf\xe9\nX = 1\n")
    assert [c.id for c in convlab.load(tmp_path).cases] == ["a"]


def test_an_empty_json_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text("")
    [problem] = problems_of(path).problems
    assert problem.message == "empty file: it holds no suite"


def test_a_thinkingbox_scenario_alone_says_to_load_the_dataset(tmp_path: Path) -> None:
    folder = tmp_path / "scenario"
    folder.mkdir()
    path = folder / "shop.yaml"
    path.write_text("world_state:\n  items: []\nbot_instructions: be nice\n")
    [problem] = problems_of(path).problems
    assert problem.message.startswith("this is a thinkingbox scenario: load the dataset folder")
    loose = tmp_path / "shop.yaml"  # outside scenario/, told by its keys
    loose.write_text(path.read_text())
    assert "thinkingbox scenario" in str(problems_of(loose))


def test_a_fifo_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "cases.jsonl"
    os.mkfifo(fifo)
    for target in (fifo, tmp_path / "cases.jsonl"):
        [problem] = problems_of(target).problems
        assert "not a regular file (a FIFO, device or socket)" in problem.message


def test_dev_zero_is_refused_unread() -> None:
    for format in (None, "jsonl", "yaml_cases"):
        with bounded(), pytest.raises(SuiteError, match="not a regular file"):
            convlab.load("/dev/zero", format)


def test_a_fifo_inside_a_folder_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    os.mkfifo(tmp_path / "zz.jsonl")
    with bounded():
        assert [c.id for c in convlab.load(tmp_path).cases] == ["a"]


# ------------------------------------------------------------------ fuzz: every loader

_SUFFIXES = {
    "native": ".yaml",
    "yaml_cases": ".yaml",
    "python_tests": ".yml",
    "jsonl": ".jsonl",
    "suite_json": ".json",
}
_PLACES = (
    "test_cases:\n  - name: t\n    input: hi\n    ground_truth:\n{bomb}",
    "name: a\nmetadata:\n{bomb}test_cases:\n  - input: hi\n",
    "test_cases:\n  - query: hi\n    world:\n{bomb}",
    "convlab_suite: 1\ncases:\n  - id: a\n    metadata:\n{bomb}",
    "- input: hi\n  turns:\n{bomb}",
)


@st.composite
def alias_bombs(draw: st.DrawFn) -> bytes:
    """An alias bomb of some width and depth (over the budget) in some field of some shape."""
    width = draw(st.integers(2, 12))
    depth = 1
    while width**depth <= 2_000_000:
        depth += 1
    place = draw(st.sampled_from(_PLACES))
    return place.format(bomb=bomb(depth, width, indent="      ")).encode()


def hostile_texts() -> st.SearchStrategy[bytes]:
    """Documents no loader may accept: bombs, deep nesting, bad bytes, recursive anchors."""
    nesting = st.integers(5_000, 200_000).map(lambda n: b'{"a": ' * n + b"1" + b"}" * n)
    bad_bytes = st.binary(min_size=1, max_size=200).map(lambda b: b'{"id": "\xff' + b + b'"}\n')
    recursive = st.sampled_from([b"a: &a [*a]\n", b"test_cases: &t\n  - input: *t\n"])
    return st.one_of(alias_bombs(), nesting, bad_bytes, recursive)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=hostile_texts(), format=st.sampled_from(sorted(_SUFFIXES)))
def test_every_loader_ends_hostile_documents_in_a_suite_error(
    tmp_path_factory: pytest.TempPathFactory, document: bytes, format: str
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / f"suite{_SUFFIXES[format]}"
    path.write_bytes(document)
    for forced in (format, None):
        with bounded(), pytest.raises(SuiteError):
            convlab.load(path, forced)


@pytest.mark.parametrize("forced", [True, False])
@pytest.mark.parametrize("format", sorted(_SUFFIXES))
@pytest.mark.parametrize(
    "document",
    [
        '{"a": ' * 5_000 + "1" + "}" * 5_000,  # beyond libyaml's own limit (1,000)
        "[" * 600 + "]" * 600,  # within it: refused by convlab's (200)
        "".join(f"{'  ' * n}k{n}:\n" for n in range(300)),  # block style, one level a line
    ],
    ids=["flow-5000", "flow-600", "block-300"],
)
def test_deep_nesting_is_refused_at_once_with_its_line(
    tmp_path: Path, document: str, format: str, forced: bool
) -> None:
    """Deep YAML/JSON took seconds (the pure-Python parser, then a RecursionError with no
    line): it is now refused by the nesting limit, naming the line where it goes too deep."""
    path = tmp_path / f"suite{_SUFFIXES[format]}"
    path.write_text(document)
    with bounded(), pytest.raises(SuiteError) as err:
        convlab.load(path, format if forced else None)
    problem = err.value.problems[0]  # a thinkingbox .yml also says what it misses
    assert problem.file == str(path)
    block = document.startswith("k0")
    if format == "jsonl" or (format == "suite_json" and forced and block):
        assert problem.line == 1, problem  # not JSON (a list, a bare key) before too deep
        return
    assert problem.line == (201 if block else 1), problem
    assert "nested" in problem.message, problem


@pytest.mark.parametrize("format", sorted(_SUFFIXES))
def test_every_loader_refuses_a_classic_bomb_and_an_oversized_file(
    tmp_path: Path, format: str
) -> None:
    from convlab.formats._base import MAX_YAML_CHARS

    path = tmp_path / f"suite{_SUFFIXES[format]}"
    path.write_text("test_cases:\n  - input: hi\n    ground_truth:\n" + bomb(9, indent="      "))
    with bounded(), pytest.raises(SuiteError):
        convlab.load(path, format)
    if _SUFFIXES[format] in (".yaml", ".yml"):
        path.write_text("test_cases:\n  - input: " + "x" * MAX_YAML_CHARS + "\n")
        with bounded(), pytest.raises(SuiteError, match="file too big"):
            convlab.load(path, format)
