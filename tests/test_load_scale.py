"""Loading at scale (issue 10, Inputs 3 and 4): a folder of many files is read in one linear
walk, with the same files, order and result as before; big JSONL files are streamed.

Speed and memory are printed by benchmarks/bench_load.py, never asserted here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import convlab as cl
from convlab.errors import SuiteError
from convlab.formats import merge


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
