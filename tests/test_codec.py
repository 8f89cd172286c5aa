"""The compact result line (convlab.model._codec) holds exactly what pydantic's JSON holds.

Every result of every example suite, and results built to hold the odd values (long and
unicode replies, tool calls, NaN scores, non-string keys, sets), is encoded, decoded and
compared field for field with the model pydantic reads back from its own JSON; its row hint
gives the same `Run.df` row as the decoded model.
"""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest
import yaml

import convlab as cl
from convlab.agents.protocol import as_agent
from convlab.model._codec import decode, encode, row_of_line
from convlab.model.conversation import Message, Observation, ToolCall, Usage
from convlab.model.records import Results, instance_row
from convlab.model.results import AssertionResult, CaseResult, CheckpointResult, TurnResult

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPECTED = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())


def _pydantic_round_trip(r: CaseResult) -> CaseResult:
    return CaseResult.model_validate_json(r.model_dump_json())


def _microseconds(v: float) -> float:
    """A timing as the line rounds it (half up: `round`'s binary halves go either way)."""
    return int(v * 1000 + 0.5) / 1000 if v >= 0 else v


def _rounded(value: object) -> object:
    """Timings as the line keeps them (to the microsecond)."""
    if isinstance(value, dict):
        return {
            k: _microseconds(v)
            if k in ("duration_ms", "latency_ms") and isinstance(v, float)
            else _rounded(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _same(a: CaseResult, b: CaseResult) -> None:
    da, db = _rounded(a.model_dump(mode="json")), _rounded(b.model_dump(mode="json"))
    for name in da:
        assert da[name] == db[name], f"{a.case_id}: field {name} differs"


def _example_results() -> list[CaseResult]:
    out: list[CaseResult] = []
    for spec in EXPECTED.values():
        suite = cl.load(EXAMPLES / spec["path"])
        run = cl.run(suite, as_agent(spec["agent"]), simulator=spec["simulator"], progress=False)
        out += list(run.results)
    return out


def test_every_example_result_survives_the_compact_line() -> None:
    results = _example_results()
    assert len(results) > 20 and {r.status for r in results} >= {"passed", "failed", "error"}
    for r in results:
        line = encode(r)
        back = decode(line)
        _same(back, _pydantic_round_trip(r))
        assert row_of_line(orjson.loads(line), line) == instance_row(back)


def _odd_result() -> CaseResult:
    long = "ünïcödé “quotes” \n" * 40
    obs = Observation(
        text=long,
        messages=[
            Message(role="assistant", content=None, tool_calls=[{"id": "1", "type": "function"}]),
            Message(role="tool", content="{}", tool_call_id="1", refusal="kept as extra"),
            Message(role="assistant", content=long),
        ],
        tool_calls=[ToolCall("lookup", {"q": 1}, result={"rows": [1, 2]}, id="1")],
        usage=Usage(prompt_tokens=3, completion_tokens=4, total_tokens=7),
        effects={"files": ["a"]},
        latency_ms=12.3456789,
        thread_id="r:1",
        turn_id="agent-given",
        trace_id="also-agent-given",
    )
    odd = AssertionResult(
        kind="custom",
        status="failed",
        message="nope",
        expected={1: "int key"},
        actual={"one set"},  # one item: a copied set may iterate in another order
        score=math.nan,
        details={"nested": [{"x": None}]},
        children=[AssertionResult(kind="contains", status="error", error="bad", blame="suite")],
    )
    turn = TurnResult(
        index=0, step_id="s1", messages=[Message(content="hi")], observation=obs, assertions=[odd]
    )
    return CaseResult(
        case_id="odd",
        variant={"s1": "v2"},
        repetition=1,
        run=2,
        status="failed",
        turns=[turn, TurnResult(index=1, status="error", error="agent error", code="X")],
        checkpoints=[CheckpointResult(id="cp", reached=True, reached_at_turn=1, passed=True)],
        metadata={"tags": ["a"]},
        attempts=3,
        started_at="2026-12-01T00:00:00.000+00:00",
    )


def test_odd_values_survive_the_compact_line_as_pydantic_writes_them() -> None:
    r = _odd_result()
    line = encode(r)
    back = decode(line)
    _same(back, _pydantic_round_trip(r))
    assert back.turns[0].observation is not None
    assert back.turns[0].observation.latency_ms == 12.346  # timings kept to the microsecond
    assert row_of_line(orjson.loads(line), line) == instance_row(back)


def test_a_plain_reply_writes_its_text_once_and_derived_ids_not_at_all(tmp_path: Path) -> None:
    suite = cl.Suite(
        id="s",
        cases=[
            cl.Case(
                id=f"c{i}",
                input=[Message(content="hi")],
                assertions=[{"kind": "contains", "value": "ok"}],
            )
            for i in range(2)
        ],
    )
    run = cl.run(suite, lambda m: "ok", store=tmp_path / "s.jsonl", progress=False)
    line = (tmp_path / "s.jsonl").read_bytes().splitlines()[1]
    assert b"turn_id" not in line and b"trace_id" not in line and b'"role"' not in line
    obs = run.results[0].turns[0].observation
    assert obs is not None and obs.turn_id and obs.trace_id and obs.thread_id
    assert obs.messages == [Message(role="assistant", content="ok")]


def test_results_read_as_a_list_and_keep_what_was_changed() -> None:
    r = _odd_result()
    results = Results()
    results.add(r.status, encode(r))
    results.append(r)
    assert len(results) == 2 and results == [results[0], r]
    assert results[1] is r and results[-1] is r and results[0] is results[0]
    results[0].status = "passed"  # a model that was read is rowed again
    assert [row[4] for row in results.rows()] == ["passed", "failed"]
    del results[0]
    assert list(results) == [r]
    import pickle

    r.turns[0].assertions[0].score = 0.5  # NaN equals nothing, itself included
    assert pickle.loads(pickle.dumps(results)) == [r]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_run_of_lean_results_saves_and_loads_as_before(tmp_path: Path, suffix: str) -> None:
    spec = EXPECTED["expense"]
    run = cl.run(cl.load(EXAMPLES / spec["path"]), as_agent(spec["agent"]), progress=False)
    back = cl.load_run(run.save(tmp_path / f"r{suffix}"))
    assert back.results == run.results
    assert back.df.equals(run.df)
