"""Result records: one form, one encoding, read back unchanged wherever they are kept.

Records are generated from their own type declarations (msgspec's type info), so a field
added to any record type is generated, encoded and compared here with no change to this file.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import inspect as mi
from pydantic import BaseModel

import convlab as cl
from convlab.engine.store import ResultStore, read_store
from convlab.model.answer import Answer
from convlab.model.codec import FormatError, decode_as, encode
from convlab.model.conversation import Message, ToolCall, Usage
from convlab.model.records import (
    AssertionResult,
    CaseResult,
    CheckpointResult,
    ErrorInfo,
    Observation,
    TurnResult,
)
from convlab.model.rows import instance_row
from convlab.model.run import Run
from convlab.model.suite import TurnInput

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
RECORD_TYPES = (
    Usage,
    ErrorInfo,
    Observation,
    AssertionResult,
    TurnResult,
    CheckpointResult,
    CaseResult,
)

# --- records generated from their types --------------------------------------------------

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
"""Valid Unicode (a lone surrogate is not text: convlab cleans it where it enters)."""
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
USER_MODELS: dict[type[BaseModel], st.SearchStrategy[Any]] = {
    Message: st.builds(
        Message,
        role=st.sampled_from(["user", "assistant", "tool", "system"]),
        content=st.none() | text,
        name=st.none() | text,
    ),
    ToolCall: st.builds(
        ToolCall,
        name=text,
        arguments=st.dictionaries(text, json_value, max_size=2),
        result=json_value,
        error=st.none() | text,
        id=st.none() | text,
    ),
    TurnInput: st.builds(TurnInput, text=text),
}
"""What users write (pydantic models) that a record holds."""


def strategy(t: mi.Type) -> st.SearchStrategy[Any]:
    """Values of a msgspec type, any field of any record included."""
    if isinstance(t, mi.StructType):
        fields = {f.name: st.deferred(lambda f=f: strategy(f.type)) for f in t.fields}
        return st.fixed_dictionaries(fields).map(lambda kw, cls=t.cls: cls(**kw))
    if isinstance(t, mi.UnionType):
        return st.one_of([strategy(x) for x in t.types])
    if isinstance(t, mi.ListType):
        return st.lists(strategy(t.item_type), max_size=2)
    if isinstance(t, mi.DictType):
        return st.dictionaries(strategy(t.key_type), strategy(t.value_type), max_size=2)
    if isinstance(t, mi.LiteralType):
        return st.sampled_from(t.values)
    if isinstance(t, mi.CustomType) and t.cls in USER_MODELS:
        return USER_MODELS[t.cls]
    simple: dict[type, st.SearchStrategy[Any]] = {
        mi.StrType: text,
        mi.IntType: st.integers(-(2**63), 2**63 - 1),
        mi.FloatType: st.floats(allow_nan=False, allow_infinity=False),
        mi.BoolType: st.booleans(),
        mi.NoneType: st.none(),
        mi.AnyType: json_value,
    }
    if type(t) in simple:
        return simple[type(t)]
    raise TypeError(f"no strategy for {t!r}: teach tests/test_records.py its values")


def records(cls: type) -> st.SearchStrategy[Any]:
    return strategy(mi.type_info(cls))


SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(st.data())
def test_every_record_type_round_trips_through_its_line(data: st.DataObject) -> None:
    for cls in (*RECORD_TYPES, Answer):
        record = data.draw(records(cls), label=cls.__name__)
        line = encode(record)
        assert decode_as(line, cls) == record
        assert cls.from_json(record.to_json()) == record
        assert cls.from_dict(record.to_dict()) == record


def _unique(results: list[CaseResult]) -> list[CaseResult]:
    """One result per instance key (a run's frames keep the latest of each)."""
    return [msgspec.structs.replace(r, case_id=f"{i}:{r.case_id}") for i, r in enumerate(results)]


def _same_row(row: Any, expected: dict[str, Any]) -> None:
    for name, value in expected.items():
        found = row[name]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            assert found is None or (isinstance(found, float) and math.isnan(found)), name
        else:
            assert found == value, name


@SETTINGS
@given(st.lists(records(CaseResult), min_size=1, max_size=4).map(_unique))
def test_case_results_round_trip_through_the_store_load_run_saves_and_df(
    tmp_path_factory: pytest.TempPathFactory, results: list[CaseResult]
) -> None:
    folder = tmp_path_factory.mktemp("rt")
    run = Run(id="r", agent="a", results=results, started_at="2026-01-01T00:00:00+00:00")
    store = ResultStore(folder / "store.jsonl", run.without_results(), resume=False)
    for r in results:
        store.append(encode(r))
    store.close(run)
    _, stored = read_store(folder / "store.jsonl")
    assert list(stored) == results
    assert list(cl.load_run(folder / "store.jsonl").results) == results
    for suffix in (".json", ".jsonl"):
        back = cl.load_run(run.save(folder / f"run{suffix}"))
        assert list(back.results) == results, suffix
    rows = cl.load_run(folder / "store.jsonl").df.to_dict("records")
    expected = {instance_row(r).key: instance_row(r)._asdict() for r in results}
    assert len(rows) == len(expected)
    for row in rows:
        key = (row["case_id"], row["variant"], row["repetition"], row["run"])
        _same_row(row, expected[key])


# --- the store line ------------------------------------------------------------------------


def test_a_passed_single_turn_case_with_3_checks_is_stored_in_at_most_1_kb(tmp_path: Path):
    suite = cl.Suite(
        id="s",
        cases=[
            cl.Case(
                id="c7",
                input=[Message(content="message 7")],
                assertions=[
                    {"kind": "contains", "value": "ok"},
                    {"kind": "regex", "pattern": r"\w+"},
                    {"kind": "not_contains", "value": "error"},
                ],
            )
        ],
    )
    store = tmp_path / "s.jsonl"
    run = cl.run(suite, lambda m: "ok", store=store, progress=False)
    assert run.results[0].status == "passed"
    line = store.read_bytes().splitlines()[1]
    assert len(line) <= 1024, line


def test_a_mangled_store_line_is_left_out_naming_its_line_and_field(tmp_path: Path) -> None:
    """As a resume does: every bad line is named, the others are read."""
    store = tmp_path / "s.jsonl"
    suite = cl.Suite(id="s", cases=[cl.Case(id=c, input=[Message(content="hi")]) for c in "abc"])
    cl.run(suite, lambda m: "ok", store=store, progress=False)
    lines = store.read_bytes().splitlines()
    lines[1] = lines[1].replace(b'"status":"passed"', b'"status":"maybe"')
    lines[2] = lines[2].replace(b'"hi"', b'"h\xff"')  # not UTF-8
    store.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.warns(RuntimeWarning) as seen:
        run = cl.load_run(store)
    message = str(seen[0].message)
    assert "2 stored line(s)" in message and "line 2 (status)" in message
    assert "line 3: not UTF-8" in message and "maybe" in message
    assert len(run.results) == 1 and run.status == "completed"


def test_a_mangled_line_of_a_saved_run_is_an_error_naming_its_line_and_field(
    tmp_path: Path,
) -> None:
    suite = cl.Suite(id="s", cases=[cl.Case(id=c, input=[Message(content="hi")]) for c in "ab"])
    saved = cl.run(suite, lambda m: "ok", progress=False).save(tmp_path / "run.jsonl")
    lines = saved.read_bytes().splitlines()
    lines[1] = lines[1].replace(b'"status":"passed"', b'"status":"maybe"')
    lines[2] = lines[2].replace(b'"hi"', b'"h\xff"')
    saved.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(cl.SuiteError) as info:
        cl.load_run(saved)
    message = str(info.value)
    assert f"{saved}:2" in message and f"{saved}:3" in message  # every bad line, not the first
    assert "status" in message and "not UTF-8" in message


# --- what earlier versions wrote -----------------------------------------------------------


@pytest.mark.parametrize(
    "name, files",
    [
        ("expense", ("store.jsonl", "json", "jsonl")),
        ("catalog", ("store.jsonl", "json", "jsonl")),
        ("finance", ("store.jsonl",)),
        ("cloud_drive", ("store.jsonl",)),
    ],
)
def test_stores_and_saves_of_format_1_load_equal(name: str, files: tuple[str, ...]) -> None:
    """tests/data/format1 holds stores and saves written by convlab before records were msgspec
    structs (compact store lines), with every result as it was then (`expected.json`)."""
    expected_all = json.loads((DATA / "format1" / "expected.json").read_text(encoding="utf-8"))
    expected = sorted((CaseResult.from_dict(r) for r in expected_all[name]), key=_key)
    for suffix in files:
        run = cl.load_run(DATA / "format1" / f"{name}.{suffix}")
        # a store holds results in the order they finished, a save in plan order
        assert sorted(run.results, key=_key) == expected, suffix
        assert run.suite is not None and run.status == "completed"


def _key(r: CaseResult) -> tuple[str, str, int, int]:
    return r.key


def test_a_format_1_store_resumes_and_reads_back_whole(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    store.write_bytes((DATA / "format1" / "expense.store.jsonl").read_bytes())
    before = cl.load_run(store)
    suite = before.suite  # the suite it was written for (its fingerprint is checked)
    assert suite is not None
    run = cl.run(suite, "demo:expense", store=store, resume=True, runs=2, progress=False)
    assert len(run.results) == 2 * len(before.results)
    assert list(run.results)[: len(before.results)] == list(before.results)
    again = cl.load_run(store)
    assert list(again.results) == list(run.results)


def test_a_store_of_an_unknown_format_names_its_version(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    store.write_text('{"type":"header","run":{"format_version":99,"id":"x"}}\n', encoding="utf-8")
    with pytest.raises(FormatError, match="format 99"):
        cl.load_run(store)
    with pytest.raises(FormatError, match="format 99"):
        cl.run(cl.Suite(id="s"), lambda m: "ok", store=store, resume=True, progress=False)
    saved = tmp_path / "run.json"
    saved.write_text('{"format_version": 3, "results": []}', encoding="utf-8")
    with pytest.raises(FormatError, match="format 3"):
        cl.load_run(saved)


# --- one form ------------------------------------------------------------------------------


def test_no_module_touches_pydantic_internals_or_the_old_fast_paths() -> None:
    found = subprocess.run(
        ["git", "grep", "-n", "-E", "_fastline|_trusted|passed_line|__pydantic_", "--", "convlab"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1 and not found.stdout, found.stdout


# --- text that is not Unicode ----------------------------------------------------------------


def test_a_lone_surrogate_in_a_reply_cannot_sink_a_run(tmp_path: Path) -> None:
    suite = cl.Suite(id="s", cases=[cl.Case(id="a", input=[Message(content="hi")])])
    store = tmp_path / "s.jsonl"
    run = cl.run(suite, lambda m: "bad \udcff reply", store=store, progress=False)
    [result] = run.results
    obs = result.turns[0].observation
    assert result.status == "passed" and obs is not None
    assert obs.text == "bad \ufffd reply" and "U+FFFD" in (obs.error or "")
    for path in (store, run.save(tmp_path / "run.json"), run.save(tmp_path / "run.jsonl")):
        assert list(cl.load_run(path).results) == [result]


def test_a_lone_surrogate_in_a_reply_cannot_sink_the_cli(tmp_path: Path) -> None:
    (tmp_path / "surrogate_agent.py").write_text(
        "def agent(messages):\n    return 'bad \\udcff reply'\n", encoding="utf-8"
    )
    (tmp_path / "s.jsonl").write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "convlab", "run", "-i", "s.jsonl", "-n",
         "surrogate_agent:agent", "-o", "rep.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [result] = cl.load_run(tmp_path / "rep.json").results
    assert result.turns[0].observation.text == "bad \ufffd reply"
