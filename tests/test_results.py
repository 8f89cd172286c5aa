"""Run frames, save/load round trips (json, jsonl, engine store) and the Run display."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import convlab as cl
from convlab.model.conversation import ToolCall, Usage
from convlab.model.records import (
    AssertionResult,
    CaseResult,
    CheckpointResult,
    Observation,
    TurnResult,
)
from convlab.model.run import Run
from convlab.model.suite import TurnInput
from convlab.plan import fingerprint

FRAMES = ("df", "turns_df", "assertions_df", "checkpoints_df", "tool_calls_df")


def _suite() -> cl.Suite:
    return cl.Suite(
        id="demo",
        cases=[
            cl.Case(
                id="std",
                input=[cl.Message(content="hi")],
                assertions=[{"kind": "contains", "value": "x"}],
            ),
            cl.Case(
                id="tt",
                mode="turns",
                turns=[
                    {"input": {"text": "one"}},
                    {
                        "id": "s2",
                        "input": {"text": "two"},
                        "variants": [{"id": "v", "input": {"text": "2"}}],
                    },
                ],
            ),
            cl.Case(
                id="dyn",
                mode="dynamic",
                simulator={"goal": "g"},
                checkpoints=[{"id": "k1"}, {"id": "k2"}],
            ),
            cl.Case(id="bad", input=[cl.Message(content="boom")]),
        ],
    )


def _turn(i: int, text: str, reply: str, **kw: object) -> TurnResult:
    return TurnResult(
        index=i, input=TurnInput(text=text), observation=Observation(text=reply), **kw
    )


def make_run() -> Run:
    """Hand-built records of every shape, stored out of suite order, one key stored twice."""
    failing = AssertionResult(
        kind="contains", status="failed", message="missing 'x'", expected="x", actual="hello"
    )
    composite = AssertionResult(
        kind="all",
        status="failed",
        children=[
            AssertionResult(kind="regex", status="passed"),
            AssertionResult(kind="tool_called", status="failed", message="lookup was not called"),
        ],
    )
    tools = Observation(
        text=None,
        data={"total": 3},
        tool_calls=[ToolCall("lookup", {"q": 1}, {"hits": 2}), ToolCall(name="file", id="c2")],
        usage=Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15),
        latency_ms=12.5,
    )
    results = [
        CaseResult(
            case_id="dyn",
            status="failed",
            duration_ms=30.0,
            turns=[
                _turn(0, "", "hello", messages=[cl.Message(content="sim says hi")]),
            ],
            checkpoints=[
                CheckpointResult(id="k1", reached=True, reached_at_turn=0, passed=True),
                CheckpointResult(id="k2", reached=False),
            ],
        ),
        CaseResult(
            case_id="std",
            status="passed",
            run=0,
            duration_ms=10.0,
            reward=1.0,
            turns=[
                _turn(
                    0,
                    "hi",
                    "x marks",
                    assertions=[AssertionResult(kind="contains", expected="x", actual="x marks")],
                )
            ],
            started_at="2026-01-01T00:00:00+00:00",
        ),
        CaseResult(case_id="std", status="cancelled", run=1),
        CaseResult(
            case_id="tt",
            variant={"s2": "v"},
            status="failed",
            duration_ms=20.0,
            attempts=2,
            turns=[
                _turn(0, "one", "first"),
                TurnResult(
                    index=1,
                    step_id="s2",
                    variant="v",
                    input=TurnInput(text="2"),
                    observation=tools,
                    assertions=[composite],
                    status="failed",
                ),
            ],
        ),
        CaseResult(
            case_id="bad",
            status="error",
            error="agent error at turn 1: <script>boom",
            duration_ms=5.0,
        ),
        CaseResult(
            case_id="std",
            status="failed",
            run=1,
            duration_ms=14.0,
            turns=[_turn(0, "hi", "hello")],
            assertions=[failing],
            usage=Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3),
        ),
    ]
    return Run(
        id="r1",
        suite=_suite(),
        agent="demo:echo",
        settings={"runs": 2},
        results=results,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:00:02+00:00",
        fingerprint="abc",
        suite_assertions=[AssertionResult(kind="check", status="passed", id="all-pass")],
    )


def test_df_has_the_contract_columns_one_row_per_instance_in_suite_order():
    df = make_run().df
    contract = [
        "case_id",
        "variant",
        "repetition",
        "run",
        "status",
        "reward",
        "duration_ms",
        "turns",
        "error",
    ]
    assert contract == list(df.columns[: len(contract)])
    keys = list(zip(df["case_id"], df["variant"], df["run"], strict=True))
    assert keys == [
        ("std", "", 0),
        ("std", "", 1),
        ("tt", "s2=v", 0),
        ("dyn", "", 0),
        ("bad", "", 0),
    ]
    std1 = df.iloc[1]
    assert (std1["status"], std1["turns"], std1["duration_ms"]) == ("failed", 1, 14.0)
    assert (std1["assertions"], std1["assertions_failed"], std1["total_tokens"]) == (1, 1, 3)
    tt = df.iloc[2]
    assert (tt["tool_calls"], tt["attempts"], tt["total_tokens"]) == (2, 2, 15)
    assert (df.iloc[3]["checkpoints"], df.iloc[3]["checkpoints_reached"]) == (2, 1)


def test_error_column_says_why_an_instance_did_not_pass():
    df = make_run().df
    errors = {(c, r): e for c, r, e in df[["case_id", "run", "error"]].itertuples(index=False)}
    assert errors[("std", 0)] == ""
    assert errors[("std", 1)] == "missing 'x'"
    assert errors[("tt", 0)] == "lookup was not called"  # from inside the composite
    assert errors[("dyn", 0)] == "checkpoint k2 not reached"
    assert errors[("bad", 0)] == "agent error at turn 1: <script>boom"


def test_the_latest_record_of_an_instance_wins_everywhere():
    run = make_run()
    assert len(run.results) == 6 and len(run.df) == 5
    s = run.summary
    assert (s["total"], s["passed"], s["failed"], s["errors"], s["cancelled"]) == (5, 1, 3, 1, 0)
    assert s["pass_rate"] == pytest.approx(50 / 4)  # std 50%, tt 0%, dyn 0%, bad 0%


def test_frames_are_derived_from_the_records_on_every_call():
    run = make_run()
    run.results.append(CaseResult(case_id="new", status="passed"))
    assert list(run.df["case_id"])[-1] == "new"
    assert run.summary["passed"] == 2


def test_turns_frame():
    turns = make_run().turns_df
    tt = turns[turns["case_id"] == "tt"].set_index("turn")
    assert tt.loc[1, "step_id"] == "s2" and tt.loc[1, "turn_variant"] == "v"
    assert tt.loc[1, "input"] == "2" and tt.loc[1, "response"] == '{"total": 3}'
    assert (tt.loc[1, "tools"], tt.loc[1, "tool_calls"], tt.loc[1, "latency_ms"]) == (
        "lookup, file",
        2,
        12.5,
    )
    assert tt.loc[0, "response"] == "first"
    dyn = turns[turns["case_id"] == "dyn"].iloc[0]
    assert dyn["input"] == "sim says hi"


def test_assertions_frame_has_every_scope():
    a = make_run().assertions_df
    assert list(a["scope"]).count("suite") == 1 and a.iloc[-1]["id"] == "all-pass"
    assert pd.isna(a.iloc[-1]["run"]) and a.iloc[-1]["case_id"] == ""
    composite = a[a["kind"] == "all"].iloc[0]
    assert (composite["scope"], composite["turn"], composite["children"]) == ("turn", 1, 2)
    case_scope = a[(a["scope"] == "case")].iloc[0]
    assert (case_scope["expected"], case_scope["actual"], bool(case_scope["passed"])) == (
        "x",
        "hello",
        False,
    )


def test_checkpoint_and_tool_call_frames():
    cps = make_run().checkpoints_df
    assert list(cps["checkpoint"]) == ["k1", "k2"] and list(cps["reached"]) == [True, False]
    assert cps.iloc[0]["reached_at_turn"] == 0 and pd.isna(cps.iloc[1]["reached_at_turn"])
    calls = make_run().tool_calls_df
    assert list(calls["name"]) == ["lookup", "file"] and list(calls["index"]) == [0, 1]
    assert calls.iloc[0]["arguments"] == {"q": 1} and calls.iloc[0]["result"] == {"hits": 2}
    assert calls.iloc[1]["call_id"] == "c2" and calls.iloc[0]["turn"] == 1


def _same_views(a: Run, b: Run) -> None:
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)
    pd.testing.assert_frame_equal(a.stability(), b.stability())
    pd.testing.assert_frame_equal(a.pass_k_table(), b.pass_k_table())
    assert a.summary == b.summary


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_save_and_load_round_trip_losslessly(tmp_path, suffix):
    run = make_run()
    path = run.save(tmp_path / "out" / f"run{suffix}")
    back = cl.load_run(path)
    assert back == run  # every record, the suite, settings and timestamps
    _same_views(run, back)


def test_jsonl_keeps_the_seed_line_types(tmp_path):
    path = make_run().save(tmp_path / "run.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    types = [r["type"] for r in records]
    assert types == ["start"] + ["result"] * 6 + ["stability"] * 4 + ["summary"]
    start = records[0]
    assert (start["agent_id"], start["total_cases"]) == ("demo:echo", 4)
    result = records[2]
    assert (result["id"], result["status"], result["output"]) == ("std", "passed", "x marks")
    stab = {r["id"]: r for r in records if r["type"] == "stability"}
    assert stab["std"]["runs"] == 2 and stab["std"]["failed"] == 1
    assert stab["std"]["stability_class"] == "unstable" and stab["std"]["stable"] is False
    summ = records[-1]
    assert {"total", "passed", "failed", "skipped", "errors", "timeouts", "duration_ms"} <= set(
        summ
    )
    assert summ["duration_ms"] == 2000 and summ["total"] == 5
    assert "NaN" not in path.read_text()


def test_loads_an_engine_results_store(tmp_path):
    from convlab.engine.store import ResultStore

    run = make_run()
    header = run.without_results()
    store = ResultStore(tmp_path / "store.jsonl", header, resume=False)
    for r in run.results:
        store.append(r.to_json().encode())
    store.close()
    with open(tmp_path / "store.jsonl", "a") as fh:  # a crash mid-write
        fh.write('{"type":"result","case_id":"std","sta')
    back = cl.load_run(tmp_path / "store.jsonl")
    assert header.fingerprint == fingerprint(run.suite)  # the store hashes the suite it holds
    run.fingerprint = header.fingerprint
    assert back == run
    _same_views(run, back)


def test_a_store_read_back_is_decoded_once_for_its_frame(tmp_path, monkeypatch):
    # load_run checks each line by decoding it; Run.df and summary then use what that
    # decode gave, and a result read and changed afterwards shows in them
    from convlab.engine.store import ResultStore
    from convlab.model import codec

    run = make_run()
    store = ResultStore(tmp_path / "store.jsonl", run.without_results(), resume=False)
    for r in run.results:
        store.append(r.to_json().encode())
    store.close()
    decoded = []
    real = codec._decoder(CaseResult)

    class Counting:
        def decode(self, text):
            decoded.append(text)
            return real.decode(text)

    monkeypatch.setattr(codec, "_decoder", lambda kind: Counting() if kind is CaseResult else real)
    back = cl.load_run(tmp_path / "store.jsonl")
    assert len(decoded) == len(run.results)
    expected = run.df
    pd.testing.assert_frame_equal(back.df, expected)
    assert back.summary == run.summary
    assert len(decoded) == len(run.results)  # the frame and the summary decoded nothing
    latest = back.results[-1]
    assert latest.status != "cancelled"
    latest.status = "cancelled"
    rows = back.df.set_index(["case_id", "variant", "repetition", "run"])
    assert rows.loc[latest.key, "status"] == "cancelled"


def test_load_reports_every_bad_line_with_file_line_and_path(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"type": "start", "run": {"agent": "a"}}\n'
        '{"type": "result", "case_id": "a", "status": "passed"}\n'
        "not json\n"
        '{"type": "result", "case_id": "b", "status": "maybe"}\n'
        '{"type": "result", "case_id": "c", "status": "passed", "turns": [{"index": "x"}]}\n'
        '{"type": "party"}\n'
    )
    with pytest.raises(cl.SuiteError) as info:
        cl.load_run(path)
    text = str(info.value)
    assert len(info.value.problems) == 4
    assert "bad.jsonl:3: not JSON" in text
    assert "bad.jsonl:4: status:" in text
    assert "bad.jsonl:5: turns[0].index:" in text
    assert "bad.jsonl:6: type: unknown record type 'party'" in text


def test_load_json_errors_and_missing_file(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"results": [{"case_id": "a", "status": "nope"}]}))
    with pytest.raises(cl.SuiteError, match=r"run.json: results\[0\].status"):
        cl.load_run(path)
    path.write_text("{oops")
    with pytest.raises(cl.SuiteError, match=r"run\.json:1: not JSON"):
        cl.load_run(path)
    with pytest.raises(cl.SuiteError, match="no such results file"):
        cl.load_run(tmp_path / "missing.json")


def test_reads_seed_style_result_lines(tmp_path):
    path = tmp_path / "yao.jsonl"
    path.write_text(
        '{"type":"start","timestamp":"2026-01-01T00:00:00Z","agent_id":"kw","total_cases":2}\n'
        '{"type":"result","id":"T1","status":"passed","duration_ms":12,"output":"ok"}\n'
        '{"type":"result","id":"T2","status":"timeout","duration_ms":99,"error":"slow"}\n'
        '{"type":"summary","total":2,"passed":1}\n'
    )
    run = cl.load_run(path)
    assert run.agent == "kw" and run.results[0].metadata == {"output": "ok"}
    assert list(run.df["status"]) == ["passed", "timeout"]
    assert list(run.df["error"]) == ["", "slow"]


@pytest.mark.parametrize("name", ["run.csv", "run.txt", "run"])
def test_save_names_the_supported_suffixes(tmp_path, name):
    with pytest.raises(ValueError, match=r"supported suffixes: .*\.html, .*\.json, \.jsonl"):
        make_run().save(tmp_path / name)
    assert not (tmp_path / name).exists()


def test_a_comparison_saves_through_the_one_saver_registry(tmp_path):
    """Runs, experiments and comparisons are written by one registry, keyed by what is saved
    and the suffix: a comparison's `.json` and `.md`, and the suffixes it has named."""
    import json

    from convlab.analysis.io import SAVERS, suffixes

    before = cl.run("examples/expense", "demo:expense", progress=False, history=False)
    after = cl.run("examples/expense", "demo:finance", progress=False, history=False)
    cmp = cl.compare(before, after)
    data = json.loads(cmp.save(tmp_path / "cmp.json").read_text(encoding="utf-8"))
    assert data["summary"] == cmp.summary and len(data["cases"]) == len(cmp) == 12
    assert data["cases"][0]["case_id"] == cmp.iloc[0]["case_id"]
    markdown = cmp.save(tmp_path / "cmp.md").read_text(encoding="utf-8")
    assert markdown.count("\n| ") == 1 + 12 and "| expense-greeting |" in markdown
    with pytest.raises(
        ValueError, match=r"the comparison .* supported suffixes: \.json, \.markdown, \.md"
    ):
        cmp.save(tmp_path / "cmp.html")
    assert {"run.json", "experiment.json", "comparison.json"} <= set(SAVERS)
    assert ".ipynb" in suffixes("run") and ".ipynb" not in suffixes("experiment")


def test_run_display_is_escaped_and_names_the_worst_cases():
    run = make_run()
    run.results.append(
        CaseResult(case_id="<img src=x onerror=alert(1)>", status="failed", error="<b>bad</b>")
    )
    page = run._repr_mimebundle_()["text/html"]
    assert "<img" not in page and "<b>bad" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    text = str(run)
    assert "6 instances: 1 passed, 4 failed, 1 errors" in text
    assert "worst cases:" in text and "agent error at turn 1" in text
    assert "errors count as failed" in text
    assert repr(run).startswith("<Run ") and "failed=4" in repr(run)  # cheap: asyncio reprs results


def test_run_stability_and_pass_k_table_follow_suite_order():
    run = make_run()
    st = run.stability()
    assert list(st["case_id"]) == ["std", "tt", "dyn", "bad"]
    assert st.iloc[0]["runs"] == 2 and st.iloc[0]["pass_rate"] == 50.0
    assert run.stability(count_errors_as="excluded").set_index("case_id").loc["bad", "runs"] == 0
    table = run.pass_k_table(ks=[1])
    assert list(table["pass_hat_k"]) == [0.5, 0.0, 0.0, 0.0]


def test_a_real_run_round_trips_through_save_and_its_store(tmp_path):
    suite = cl.Suite(
        id="live",
        cases=[
            cl.Case(
                id="p",
                input=[cl.Message(content="Hi")],
                assertions=[{"kind": "contains", "value": "echo"}],
            ),
            cl.Case(
                id="f",
                input=[cl.Message(content="Hi")],
                assertions=[{"kind": "contains", "value": "nope"}],
            ),
            cl.Case(id="s", input=[cl.Message(content="x")], skip="not today"),
        ],
    )

    def agent(messages):
        return cl.Reply(
            text=f"echo: {messages[-1]['content']}", tool_calls=[cl.ToolCall("lookup", {"q": 1})]
        )

    run = cl.run(suite, agent, runs=3, progress=False, store=tmp_path / "store.jsonl")
    st = run.stability().set_index("case_id")
    assert (st.loc["p", "classification"], st.loc["f", "pass_rate"]) == ("stable", 0.0)
    assert st.loc["s", "runs"] == 0 and run.summary["skipped"] == 3
    assert "nope" in run.df.set_index("case_id").loc["f", "error"].iloc[0]
    for source in (run.save(tmp_path / "r.json"), run.save(tmp_path / "r.jsonl")):
        assert cl.load_run(source) == run
    stored = cl.load_run(tmp_path / "store.jsonl")
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(stored, name), getattr(run, name), obj=name)
    assert not cl.compare(stored, run)["beyond_noise"].any()
