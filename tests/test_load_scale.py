"""Loading at scale: a folder of many files is read in one linear
walk, with the same files, order and result as before; big JSONL files are streamed.

Speed and memory are printed by benchmarks/bench_load.py, never asserted here.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

import convlab as cl
from convlab.errors import SHOWN_PROBLEMS, SuiteError
from convlab.formats import jsonl, merge
from convlab.formats._base import Problems
from convlab.formats._jsonl_lines import LazyCases, Lines


def _case(n: int) -> str:
    return json.dumps(
        {"id": f"case-{n:05d}", "input": f"Q {n}?", "assert": {"type": "contains", "value": "a"}}
    )


def _visible(root: Path) -> list[Path]:
    """The files `load` read before the one-walk rewrite: sorted rglob, hidden parts dropped."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not any(part.startswith((".", "__")) for part in p.relative_to(root).parts)
    )


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """1,200 one-case files in nested folders (names sorting differently as text and as
    parts), with hidden folders and files, a symlinked file and a symlinked folder."""
    root = tmp_path / "suite"
    for n in range(1_200):
        folder = root / f"g{n % 7}" / ("deep" if n % 3 else "") / ("a-b" if n % 5 == 0 else "a")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"c{n:05d}.jsonl").write_text(_case(n) + "\n")
    (root / "a").mkdir()
    (root / "a" / "x.jsonl").write_text(_case(90_001) + "\n")
    (root / "a-z.jsonl").write_text(_case(90_002) + "\n")
    for hidden in (".git", "__pycache__", "g1/.cache"):
        (root / hidden).mkdir(parents=True, exist_ok=True)
        (root / hidden / "bad.jsonl").write_text("not json\n")
    (root / ".hidden.jsonl").write_text("not json\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "linked.jsonl").write_text(_case(90_003) + "\n")
    os.symlink(outside / "linked.jsonl", root / "link.jsonl")
    os.symlink(outside, root / "linked-folder")  # never entered, as rglob never entered it
    return root


def test_a_folder_of_many_files_loads_every_case_in_the_old_order(many: Path) -> None:
    suite = cl.load(many)
    expected = merge([cl.load(p) for p in _visible(many)], name=many.name)
    assert len(suite.cases) == 1_203
    assert [c.id for c in suite.cases] == [c.id for c in expected.cases]
    assert suite.model_dump() == expected.model_dump()
    assert [s.file for s in suite.sources] == [str(p) for p in _visible(many)]


def test_a_bad_file_among_many_is_reported_with_its_line(many: Path) -> None:
    (many / "g3" / "a" / "broken.jsonl").write_text(_case(1) + "\n{nope\n")
    with pytest.raises(SuiteError) as err:
        cl.load(many)
    (problem,) = err.value.problems
    assert problem.file.endswith("broken.jsonl") and problem.line == 2


def test_a_duplicate_id_across_many_files_names_both(many: Path) -> None:
    (many / "zz.jsonl").write_text(_case(7) + "\n")
    with pytest.raises(SuiteError, match=r"duplicate case id 'case-00007'.*c00007\.jsonl:1"):
        cl.load(many)


def test_a_file_read_through_two_names_is_read_once_as_before(tmp_path: Path) -> None:
    """A symlink and its target in one folder: the same lines, one case (as before)."""
    (tmp_path / "a.jsonl").write_text(_case(1) + "\n")
    os.symlink(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert [c.id for c in cl.load(tmp_path).cases] == ["case-00001"]


# ------------------------------------------------------------ Input 4: streamed JSONL

ROOT = Path(__file__).resolve().parent.parent
JSONL_FILES = sorted(
    [*ROOT.glob("tests/data/**/*.jsonl"), *ROOT.glob("examples/**/*.jsonl")],
)  # tests/data/corpus/yao holds real suites of Yao's


def _outcome(path: Path) -> tuple[str, object]:
    try:
        suite = cl.load(path)
    except SuiteError as err:
        return "error", err.problems
    return "suite", (suite.model_dump(), [c.model_dump() for c in suite.cases])


def test_there_are_jsonl_files_to_compare() -> None:
    assert len(JSONL_FILES) >= 15, JSONL_FILES


@pytest.mark.parametrize("path", JSONL_FILES, ids=lambda p: p.name)
def test_the_streamed_cases_equal_the_listed_ones(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every JSONL file of the tests, examples and corpus: read as lines on demand, the suite
    (or its problems) equals the suite read into a list, and the text loader's."""
    listed = _outcome(path)
    if listed[0] == "suite":
        text = jsonl.load_jsonl(path, path.read_text(encoding="utf-8-sig"))
        assert listed[1] == (text.model_dump(), [c.model_dump() for c in text.cases])
    monkeypatch.setattr(jsonl, "LAZY_BYTES", 0)
    assert _outcome(path) == listed
    if listed[0] == "suite":
        assert isinstance(cl.load(path).cases, LazyCases)


def _big(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "LAZY_BYTES", 0)


@pytest.mark.usefixtures("streamed")
def test_a_streamed_suite_reads_as_a_list(tmp_path: Path) -> None:
    path = _big(tmp_path / "big.jsonl", [_case(n) for n in range(50)])
    suite = cl.load(path)
    cases = suite.cases
    assert isinstance(cases, LazyCases) and len(cases) == 50
    assert cases[0] is cases[0]  # one object while it is held
    assert [c.id for c in cases[-2:]] == ["case-00048", "case-00049"]
    assert cases[-1].source is not None and cases[-1].source.line == 50
    assert [c.id for c in suite.filter(run="0004[0-2]").cases] == [
        f"case-0004{n}" for n in range(3)
    ]
    assert suite.case("case-00007").input is not None
    with pytest.raises(IndexError):
        cases[50]
    eager = merge([cl.load(path), cl.load(_big(tmp_path / "other.jsonl", [_case(99)]))], "x")
    assert len(eager.cases) == 51
    again = pickle.loads(pickle.dumps(suite))
    assert again == suite and list(again.cases) == list(cases)
    native = tmp_path / "native.json"
    native.write_text(suite.to_json())
    assert cl.load(native).cases == list(cases)
    assert suite.df["case_id"].tolist() == [c.id for c in cases]


@pytest.mark.usefixtures("streamed")
def test_every_bad_line_of_a_streamed_file_is_reported_at_its_line(tmp_path: Path) -> None:
    lines = [_case(n) for n in range(30)]
    lines[3] = '{"id": "x3", "input": "hi", "asert": []}'
    lines[9] = "{nope"
    lines[14] = _case(2)  # the id of line 3
    lines[20] = '{"id": "x20", "input": 5}'
    lines[26] = _case(2)
    path = tmp_path / "big.jsonl"
    path.write_bytes(
        ("\n".join(lines[:17]) + "\n").encode()
        + b'{"id": "caf\xe9", "input": "hi"}\n'  # line 18: not UTF-8
        + ("\n".join(lines[18:]) + "\n").encode()
    )
    with pytest.raises(SuiteError) as err:
        cl.load(path)
    found = [(p.line, p.path) for p in err.value.problems]
    assert found == [(4, "asert"), (10, ""), (15, "id"), (18, ""), (21, "input"), (27, "id")]
    words = ["unknown field 'asert'", "invalid JSON", "duplicate id 'case-00002'"]
    words += ["not UTF-8 text", "'input' must be", "duplicate id 'case-00002'"]
    assert all(w in p.message for w, p in zip(words, err.value.problems, strict=True))
    assert all(p.file == str(path) for p in err.value.problems)
    assert "also on line 3" in err.value.problems[2].message


@pytest.mark.usefixtures("streamed")
def test_pretty_printed_cases_stream_with_their_lines(tmp_path: Path) -> None:
    text = '// a comment\n{\n  "id": "a",\n  // why\n  "input": "hi"\n}\n' + _case(1) + "\n"
    path = tmp_path / "pretty.jsonl"
    path.write_text(text)
    suite = cl.load(path)
    assert [(c.id, c.source.line if c.source else None) for c in suite.cases] == [
        ("a", 2),
        ("case-00001", 7),
    ]
    assert suite.cases[0].input is not None and suite.cases[0].input[0].content == "hi"


def test_a_suite_error_prints_the_first_problems_and_counts_the_rest(tmp_path: Path) -> None:
    path = _big(tmp_path / "bad.jsonl", ['{"id": 1, "input": "x"}'] * 5_000)
    with pytest.raises(SuiteError) as err:
        cl.load(path)
    assert len(err.value.problems) == 5_000  # every one is kept
    shown = str(err.value).splitlines()
    assert len(shown) == SHOWN_PROBLEMS + 1
    assert shown[-1] == f"... and {5_000 - SHOWN_PROBLEMS:,} more problems"


@pytest.mark.usefixtures("streamed")
def test_a_streamed_case_whose_attachment_went_away_says_so(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(b"\x89PNG")
    part = {"type": "image", "source": "file://./pic.png"}
    case = {"id": "a", "input": [{"role": "user", "content": [part]}]}
    path = _big(tmp_path / "big.jsonl", [json.dumps(case)])
    suite = cl.load(path)
    (tmp_path / "pic.png").unlink()
    with pytest.raises(SuiteError, match=r"big\.jsonl:1: .*file not found"):
        suite.cases[0]


@pytest.mark.parametrize("size", [0, 10, 300_000, 2_000_000])
def test_lines_are_the_texts_lines_whatever_the_size(size: int) -> None:
    """Small files are split with bytes.find, big ones with numpy: the same lines."""
    text = "".join(f"line {n}\n" + ("\n" if n % 7 == 0 else "") for n in range(size // 8))
    text += "last, no newline" if size % 3 else ""
    lines = Lines(("\ufeff" + text).encode(), Problems("x"))
    assert list(lines) == text.split("\n")
