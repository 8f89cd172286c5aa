"""intention-kernel parity: codes and limits as intention-kernel's code has them.

Every expected value comes from simtlix/intention-kernel @923d4314, src/testing/evaluation/
(the file and function are named at each test). The selection and input tables were
obtained by running the adapter's own zod schemas and matching code (agentAdapter.ts `send`,
zod 4.6.7) on these inputs; the digests by running matrix.ts `digest`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.engine.codes import CODES, case_code
from convlab.engine.suite_checks import SUMMARY_KEYS, suite_summary
from convlab.errors import SelectionError
from convlab.model.records import CaseResult
from convlab.model.run import Run
from convlab.model.suite import Selection

TWO_LAMPS = {
    "id": "pick-1",
    "kind": "choice",
    "options": [
        {"id": "a", "label": "Lamp"},
        {"id": "b", "label": "Lamp"},
        {"id": "c", "label": "Desk"},
    ],
}
UNAVAILABLE, AMBIGUOUS = "EVALUATION_SELECTION_UNAVAILABLE", "EVALUATION_SELECTION_AMBIGUOUS"


def write(folder: Path, doc: dict[str, Any], name: str = "s.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def suite(*scenarios: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "id": "s", "name": "S", "scenarios": list(scenarios), **extra}


def scenario(sid: str, *steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": sid, "name": sid, "writePolicy": "read_only", "steps": list(steps), **extra}


def step(sid: str, inp: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": sid, "input": inp, **extra}


# ---------------------------------------------------------------- 10: selection codes


# agentAdapter.ts `send`: interactionSchema.safeParse(previous interaction) fails ->
# UNAVAILABLE; then `matches.length !== 1` -> AMBIGUOUS. Rows and results from running it.
SELECTION_ROWS: list[tuple[dict[str, Any], Any, str]] = [
    ({"option_index": 2}, TWO_LAMPS, "c"),
    ({"option_index": 3}, TWO_LAMPS, AMBIGUOUS),  # out of range
    ({"option_label": "Lamp"}, TWO_LAMPS, AMBIGUOUS),  # two matches
    ({"option_label": "Chair"}, TWO_LAMPS, AMBIGUOUS),  # unknown label
    ({"option_id": "b"}, TWO_LAMPS, "b"),
    ({"option_id": "z"}, TWO_LAMPS, AMBIGUOUS),  # unknown id
    ({"option_index": 0}, {"id": "pick-1"}, AMBIGUOUS),  # no options: `options ?? []`
    ({"option_index": 0}, {"id": "pick-1", "options": []}, AMBIGUOUS),  # empty options
    ({"option_index": 0}, {"kind": "choice", "options": [{"id": "a", "label": "L"}]}, UNAVAILABLE),
    ({"option_index": 0}, {"id": "", "options": [{"id": "a", "label": "L"}]}, UNAVAILABLE),
    ({"option_index": 0}, None, UNAVAILABLE),  # no interaction
    ({"option_index": 0}, {"id": "pick-1", "options": [{"id": "a"}]}, UNAVAILABLE),
    ({"option_index": 0}, {"id": "pick-1", "options": None}, UNAVAILABLE),
    ({"option_index": 0}, "pick-1", UNAVAILABLE),
]


@pytest.mark.parametrize(("selector", "interaction", "expected"), SELECTION_ROWS)
def test_selection_codes_follow_the_direct_adapter(
    selector: dict[str, Any], interaction: Any, expected: str
) -> None:
    selection = Selection(**selector)
    if expected.startswith("EVALUATION_"):
        with pytest.raises(SelectionError, match=f"^{expected}: "):
            selection.pick(interaction)
    else:
        assert selection.pick(interaction)["id"] == expected


def test_demo_catalog_publishes_interactions_a_selection_can_answer(tmp_path: Path) -> None:
    # agentAdapter.ts `send`: without an interaction `id` every selection is UNAVAILABLE;
    # the catalog demo's choices carry one, so its product pick passes end to end
    doc = suite(
        scenario(
            "pick",
            step("search", {"text": "Show me lamps"}),
            step(
                "choose",
                {"text": "that one", "selection": {"optionIndex": 0}},
                assertions=[
                    {
                        "id": "picked",
                        "kind": "check",
                        "path": ["checkpoint", "facts", 0, "productId"],
                        "operator": "equals",
                        "value": "lamp-01",
                    }
                ],
            ),
        ),
        scenario(
            "unknown",
            step("search", {"text": "Show me lamps"}),
            step("choose", {"text": "x", "selection": {"optionLabel": "Chair"}}),
        ),
    )
    run = cl.run(write(tmp_path, doc), "demo:catalog", progress=False)
    first = run.results[0].turns[0].observation
    assert first is not None and first.interaction is not None
    assert first.interaction["id"] == "product-choice-1"
    assert list(run.df["status"]) == ["passed", "error"]
    assert list(run.df["code"]) == ["", AMBIGUOUS]


# ---------------------------------------------------------------- 11: inputs at turn time


# agentAdapter.ts `inputSchema` = {text: string max 10000, selection?: exactly one selector}
# .strict(); schema.ts `step.input` is any JSON object. Each input loads, and the turn
# sending it is an error EVALUATION_AGENT_INPUT_INVALID (results of running `send`).
INVALID_INPUTS = [
    {"text": "hi", "locale": "en"},  # extra key (convlab used to pass it on)
    {},  # no text
    {"text": "", "selection": {"optionIndex": 0, "optionId": "x"}},  # two selectors
    {"text": "", "selection": {"optionIndex": -1}},  # negative index
    {"text": "", "selection": {}},  # no selector
    {"text": "t" * 10001},  # longer than 10,000 code points
    {"text": 1},
    {"text": "", "selection": {"optionIndex": 1.5}},
    {"text": "", "selection": {"optionLabel": ""}},
    {"text": "", "selection": {"optionIndex": 0, "index": 1}},
    {"text": "", "selection": "a"},
]


def test_step_inputs_are_checked_when_the_turn_is_sent(tmp_path: Path) -> None:
    scenarios = [
        scenario(
            f"bad{i}",
            step("search", {"text": "Show me lamps"}),
            step("next", given),
            step("never", {"text": "Show me lamps"}),
        )
        for i, given in enumerate(INVALID_INPUTS)
    ]
    path = write(tmp_path, suite(*scenarios, scenario("ok", step("a", {"text": "hi"}))))
    loaded = cl.load(path)  # none of them is rejected at load any more
    assert [c.turns[1].input.invalid is not None for c in loaded.cases[:-1]] == [True] * 11
    run = cl.run(loaded, "demo:catalog", progress=False)
    *bad, ok = run.results
    for result in bad:
        assert (result.status, result.code) == ("error", "EVALUATION_AGENT_INPUT_INVALID")
        # runner.ts: the first turn ran, the erring one stops the case
        assert [t.status for t in result.turns] == ["passed", "error"]
        assert result.turns[1].code == "EVALUATION_AGENT_INPUT_INVALID"
    assert ok.status == "passed"


def test_an_invalid_variant_errs_only_in_its_instances(tmp_path: Path) -> None:
    variants = [
        {"id": "good", "input": {"text": "hi"}},
        {"id": "bad", "input": {"text": "hi", "x": 1}},
    ]
    doc = suite(scenario("v", step("a", {"text": "hi"}, variants=variants)))
    direct = cl.agents.function(lambda messages: "ok", strict_input=True)
    run = cl.run(write(tmp_path, doc), direct, progress=False)
    assert list(zip(run.df["variant"], run.df["code"], strict=True)) == [
        ("a=good", ""),
        ("a=bad", "EVALUATION_AGENT_INPUT_INVALID"),
    ]


# The strict input schema belongs to the direct adapter alone (agentAdapter.ts
# `createAgentEvaluationAdapter`, `inputSchema.safeParse` in its `send`); runner.ts
# `runEvaluation` hands `structuredClone(step.input)` to whatever adapter the application
# gives it (`options.adapter.open(...).send(input, ...)`) and checks nothing. An
# application's own agent that passes `input.text` on therefore passes in the kernel.
HOST_INPUTS = [
    {"text": "plain", "locale": "en-GB"},
    {"text": "plain", "locale": "en-GB", "selection": {"optionIndex": 0}},
    {"text": "plain", "selection": {"optionIndex": 0, "optionId": "x"}},
    {"text": "t" * 10001},
    {"locale": "en-GB"},
]


@pytest.mark.parametrize("given", HOST_INPUTS)
def test_a_host_agent_receives_any_input(tmp_path: Path, given: dict[str, Any]) -> None:
    seen: list[Any] = []

    def host(messages: list[dict[str, Any]], ctx: cl.AgentContext) -> str:
        assert ctx.input is not None
        seen.append((ctx.input.text, ctx.input.extra, ctx.input.selection))
        return f"echo: {ctx.input.text}"

    first = step("search", {"text": "Show me lamps"})
    chk = {"id": "t", "kind": "check", "path": ["response", "text"], "operator": "exists"}
    doc = suite(scenario("host", first, step("s", given, assertions=[chk])))
    loaded = cl.load(write(tmp_path, doc))
    assert loaded.cases[0].turns[1].input.invalid is not None  # the direct adapter's verdict
    run = cl.run(loaded, host, progress=False)
    (result,) = run.results
    assert (result.status, result.code) == ("passed", None)
    text, extra, selection = seen[1]
    assert text == given.get("text", "")
    assert extra == {k: v for k, v in given.items() if k not in ("text", "selection")} | (
        {"selection": given["selection"]} if "optionId" in str(given.get("selection")) else {}
    )
    assert (selection is not None) is (given.get("selection") == {"optionIndex": 0})
    direct = cl.run(loaded, cl.agents.function(host, strict_input=True), progress=False)
    assert direct.results[0].code == "EVALUATION_AGENT_INPUT_INVALID"


# ---------------------------------------------------------------- 12: result codes


def test_codes_for_transport_and_evaluator_failures(
    tmp_path: Path, register_evaluator: Any
) -> None:
    @register_evaluator("ik-parity-raises")
    def raises(ctx: Any, parameters: dict[str, Any]) -> bool:
        raise RuntimeError("private upstream body")

    @register_evaluator("ik-parity-invalid")
    def invalid(ctx: Any, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"passed": "yes"}

    def agent(messages: list[dict[str, Any]]) -> str:
        if messages[-1]["content"] == "boom":
            raise ConnectionError("refused")
        return "ok"

    def custom(evaluator: str) -> dict[str, Any]:
        return {"id": "c", "kind": "custom", "evaluator": evaluator, "parameters": {}}

    doc = suite(
        scenario("transport", step("a", {"text": "boom"})),
        scenario("raises", step("a", {"text": "hi"}, assertions=[custom("ik-parity-raises")])),
        scenario("invalid", step("a", {"text": "hi"}), assertions=[custom("ik-parity-invalid")]),
        # assertions.ts `evaluate`: all/any/not pass a child's errorCode up
        scenario(
            "nested",
            step(
                "a",
                {"text": "hi"},
                assertions=[{"id": "n", "kind": "not", "assertion": custom("ik-parity-raises")}],
            ),
        ),
        scenario(
            "fails",
            step(
                "a",
                {"text": "hi"},
                assertions=[
                    {
                        "id": "t",
                        "kind": "check",
                        "path": ["response", "text"],
                        "operator": "equals",
                        "value": "no",
                    }
                ],
            ),
        ),
        scenario("external", step("a", {"text": "hi"}), writePolicy="external"),
        scenario("skip", step("a", {"text": "hi"}), skipReason="later"),
    )
    run = cl.run(write(tmp_path, doc), agent, progress=False)
    # runner.ts `executeCase` / assertions.ts `evaluate` codes; a plain failure and a
    # skip have none (evaluation.test.ts: evaluator errors are distinct from failures)
    assert dict(zip(run.df["case_id"], run.df["code"], strict=True)) == {
        "transport": "EVALUATION_TRANSPORT_FAILED",
        "raises": "EVALUATOR_FAILED",
        "invalid": "EVALUATOR_RESULT_INVALID",
        "nested": "EVALUATOR_FAILED",
        "fails": "",
        "external": "EXTERNAL_WRITES_NOT_AUTHORIZED",
        "skip": "",
    }
    assert set(run.df["code"]) - {""} <= set(CODES)
    assert run.results[0].turns[0].code == "EVALUATION_TRANSPORT_FAILED"


def test_codes_are_saved_and_old_runs_load(tmp_path: Path) -> None:
    doc = suite(scenario("t", step("a", {"text": "boom"})))
    run = cl.run(write(tmp_path, doc), lambda m: 1 / 0, progress=False)
    back = cl.load_run(run.save(tmp_path / "r.json"))
    assert back.results[0].code == "EVALUATION_TRANSPORT_FAILED"
    old = json.loads((tmp_path / "r.json").read_text())
    for result in old["results"]:
        del result["code"]
        for turn in result["turns"]:
            del turn["code"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    old_run = cl.load_run(tmp_path / "old.json")
    assert old_run.results[0].code is None and old_run.df["code"].tolist() == [""]


def test_codes_for_other_statuses_and_formats() -> None:
    def result(status: str, error: str | None = None) -> CaseResult:
        return CaseResult(case_id="c", status=status, error=error)  # type: ignore[arg-type]

    # deadline.ts `withDeadline`: EVALUATION_TIMEOUT / EVALUATION_CANCELLED
    assert case_code(result("timeout", "timeout after 1s")) == "EVALUATION_TIMEOUT"
    assert case_code(result("cancelled")) == "EVALUATION_CANCELLED"
    # runner.ts: a session that cannot open, a close that fails (nearest: convlab's hooks)
    assert case_code(result("error", "before hook failed: X")) == "EVALUATION_SESSION_FAILED"
    assert case_code(result("error", "after hook failed: X")) == "EVALUATION_CLEANUP_FAILED"


# ---------------------------------------------------------------- 13: the suite summary


def test_suite_summary_has_exactly_the_kernels_nine_keys(
    tmp_path: Path, register_evaluator: Any
) -> None:
    # runner.ts `count`: {total, pending, running, passed, failed, error, skipped, blocked,
    # cancelled}; a timeout is a turn error there (deadline.ts), so it counts as `error`
    @register_evaluator("ik-parity-summary")
    def keep(ctx: Any, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"passed": True, "evidence": ctx.summary}

    def agent(messages: list[dict[str, Any]]) -> str:
        if messages[-1]["content"] == "boom":
            raise ConnectionError("refused")
        return "ok"

    never = {
        "id": "t",
        "kind": "check",
        "path": ["response", "text"],
        "operator": "equals",
        "value": "no",
    }
    doc = suite(
        scenario("passes", step("a", {"text": "hi"})),
        scenario("fails", step("a", {"text": "hi"}, assertions=[never])),
        scenario("errs", step("a", {"text": "boom"})),
        scenario("skip", step("a", {"text": "hi"}), skipReason="later"),
        scenario("external", step("a", {"text": "hi"}), writePolicy="external"),
        assertions=[
            {"id": "s", "kind": "custom", "evaluator": "ik-parity-summary", "parameters": {}}
        ],
    )
    run = cl.run(write(tmp_path, doc), agent, progress=False)
    assert run.suite_assertions[0].actual == {
        "total": 5,
        "pending": 0,
        "running": 0,
        "passed": 1,
        "failed": 1,
        "error": 1,
        "skipped": 1,
        "blocked": 1,
        "cancelled": 0,
    }
    timed_out = [
        CaseResult(case_id="t", status="timeout"),
        CaseResult(case_id="p", status="passed"),
    ]
    summary = suite_summary(timed_out)
    assert list(summary) == list(SUMMARY_KEYS) and len(SUMMARY_KEYS) == 9
    assert (summary["error"], summary["passed"], summary["total"]) == (1, 1, 2)


# ---------------------------------------------------------------- 14: the observation


def test_observation_carries_the_direct_adapters_ids(tmp_path: Path) -> None:
    # agentAdapter.ts `send`: observation = {...TurnResult, events}; TurnResult
    # (contracts/turn.ts) has threadId, turnId, traceId, replayed. runner.ts: threadId =
    # `${runId}:${caseId}`, turnId = `eval.${digest({threadId, stepId})}`; matrix.ts: caseId =
    # digest({scenarioId, variants, repetition}). The digests were computed with matrix.ts.
    paths = ["threadId", "turnId", "traceId", "replayed", "events"]
    doc = suite(
        scenario(
            "a",
            step(
                "search",
                {"text": "Show me lamps"},
                assertions=[
                    {"id": p, "kind": "check", "path": [p], "operator": "exists"} for p in paths
                ],
            ),
        )
    )
    run = cl.run(write(tmp_path, doc), "demo:catalog", progress=False)
    (result,) = run.results
    assert result.status == "passed"
    obs = result.turns[0].observation
    assert obs is not None
    view = obs.view()
    case_id = "bae1441bc11fade5824d0f98943634aaa27d0c9e31d60e8a34a1beca52bc3b83"
    assert view["threadId"] == f"{run.id}:{case_id}"
    assert view["replayed"] is False and view["events"] == []
    assert len(view["traceId"]) == 32
    from convlab.model._ids import digest

    assert view["turnId"] == f"eval.{digest({'threadId': view['threadId'], 'stepId': 'search'})}"
    assert (
        "eval." + digest({"threadId": "r1:abc", "stepId": "search"})
        == "eval.b7c150069ffe5b5ee202c5de87b7e6984f826a7c114f0552061a11e94c11bc23"
    )
    assert (
        digest({"scenarioId": "a", "variants": {"s": "v1", "b": "x"}, "repetition": 3})
        == "2eea91c2fc9f981215b2c394c80c5cd76c87f7ec3351eca6c2ec0a204f0486ee"
    )


def test_agent_events_reach_the_observation() -> None:
    def agent(messages: list[dict[str, Any]]) -> cl.Reply:
        return cl.Reply(text="ok", events=[{"type": "decision"}])

    case = cl.Case(id="e", mode="turns", turns=[{"input": {"text": "hi"}}])
    run = cl.run(cl.Suite(id="s", cases=[case]), agent, progress=False)
    obs = run.results[0].turns[0].observation
    # evaluation.test.ts "executes every sequential turn": observation events kept as given
    assert obs is not None and obs.view()["events"] == [{"type": "decision"}]


# ---------------------------------------------------------------- 15: the case limit


def test_case_limit_above_max_cases(tmp_path: Path) -> None:
    # matrix.ts `expandCases`: more than maxCases (default 1000) -> EVALUATION_CASE_LIMIT,
    # before any session opens. 400 scenarios x 4 variants = 1,600 cases.
    variants = [{"id": f"v{j}", "input": {"text": "hi"}} for j in range(4)]
    doc = suite(
        *(scenario(f"s{i}", step("a", {"text": "hi"}, variants=variants)) for i in range(400))
    )
    path = write(tmp_path, doc)
    called: list[int] = []

    def agent(messages: list[dict[str, Any]]) -> str:
        called.append(1)
        return "ok"

    with pytest.raises(cl.SuiteError, match="EVALUATION_CASE_LIMIT: this run has 1600") as info:
        cl.run(path, agent, progress=False)
    assert info.value.problems[0].file == str(path) and not called
    with pytest.raises(cl.SuiteError, match="more than max_cases=10"):
        cl.run(path, agent, max_cases=10, progress=False)
    small = suite(scenario("s", step("a", {"text": "hi"}, variants=variants)))
    # 4 variants x 250 runs = 1000: at the limit, not above it
    assert (
        len(
            cl.run(
                write(tmp_path, small, "small.json"), agent, runs=250, parallel=16, progress=False
            ).results
        )
        == 1000
    )


def test_case_limit_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from convlab.cli import main

    variants = [{"id": f"v{j}", "input": {"text": "hi"}} for j in range(3)]
    path = write(tmp_path, suite(scenario("s", step("a", {"text": "hi"}, variants=variants))))
    code = main(
        [
            "run",
            "-i",
            str(path),
            "-n",
            "demo:catalog",
            "--max-cases",
            "2",
            "-o",
            str(tmp_path / "out.json"),
        ]
    )
    assert code != 0 and "EVALUATION_CASE_LIMIT" in capsys.readouterr().err


# ---------------------------------------------------------------- 16: code points, schemaVersion


def test_string_limits_count_code_points(tmp_path: Path) -> None:
    # schema.ts: `name: z.string().trim().min(1).max(500)`; zod 4 counts code points (run:
    # zod 4.6.7 accepts "😀" for max(1)), so 500 emoji (1,000 UTF-16 units) are a valid name
    doc = suite(scenario("a", step("a", {"text": "😀" * 10000})))
    doc["name"] = "😀" * 500
    loaded = cl.load(write(tmp_path, doc))
    assert loaded.name == "😀" * 500 and loaded.cases[0].turns[0].input.invalid is None
    doc["name"] = "😀" * 501
    with pytest.raises(cl.SuiteError, match="at most 500 characters, got 501"):
        cl.load(write(tmp_path, doc))


def test_missing_schema_version_names_the_field(tmp_path: Path) -> None:
    # schema.ts `suiteSchema`: schemaVersion: z.literal(1) is required; the issue path
    # reported with EVALUATION_SUITE_INVALID is "schemaVersion"
    doc = suite(scenario("a", step("a", {"text": "hi"})))
    del doc["schemaVersion"]
    with pytest.raises(cl.SuiteError) as info:
        cl.load(write(tmp_path, doc))
    (problem,) = info.value.problems
    assert (problem.path, problem.message) == (
        "schemaVersion",
        "missing required field 'schemaVersion'",
    )


def test_run_df_has_the_code_column_after_error() -> None:
    run = Run(results=[CaseResult(case_id="c", status="error", error="x", code="EVALUATOR_FAILED")])
    columns = list(run.df.columns)
    assert columns[columns.index("error") + 1] == "code"
    assert run.df["code"].tolist() == ["EVALUATOR_FAILED"]


# ---------------------------------------------------------------- 13: -0 is not 0
# assertions.ts `evaluate`: `equals` is Node's `isDeepStrictEqual(actual, value)` and
# `matches` falls back to it for primitives; both use SameValue for numbers, so a suite's
# `-0` (JSON.parse keeps the sign) never equals an observed 0, and an agent's `-0` never
# equals a suite's 0. 5 and 5.0 are one number in JavaScript, so they stay equal.
ZERO_ROWS = [
    ("equals", "-0", 0, False),
    ("equals", "0", "-0", False),
    ("equals", "-0", "-0", True),
    ("equals", "-0", "-0.0", True),
    ("equals", "5", "5.0", True),
    ("equals", "[-0]", "[0]", False),
    ("matches", '{"a": -0}', '{"a": 0, "b": 1}', False),
    ("matches", '{"a": 0}', '{"a": 0, "b": 1}', True),
    ("contains", "-0", "[1, 0]", False),
    ("contains", "-0", "[1, -0]", True),
    ("gte", "0", "-0", True),
    ("lte", "-0", "0", True),
]


class _Body(BaseHTTPRequestHandler):
    """An application's HTTP agent answering JSON text (so `-0` arrives as written)."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = f'{{"text": "ok", "data": {{"v": {sent["text"]}}}}}'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_minus_zero_is_not_zero_as_in_is_deep_strict_equal(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Body)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = cl.agents.http(
            f"http://127.0.0.1:{server.server_address[1]}/",
            request={"text": "{text}"},
            response={"text": "text", "data": "data"},
        )
        scenarios = []
        for i, (op, value, observed, _) in enumerate(ZERO_ROWS):
            check = (  # JSON text: json.dumps would write -0.0 for a -0
                '{"id": "c", "kind": "check", "path": ["response", "data", "v"], '
                f'"operator": "{op}", "value": {value}}}'
            )
            step_text = json.dumps({"text": str(observed)})
            scenarios.append(
                f'{{"id": "r{i}", "name": "r{i}", "writePolicy": "read_only", "steps": '
                f'[{{"id": "s", "input": {step_text}, "assertions": [{check}]}}]}}'
            )
        text = (
            f'{{"schemaVersion": 1, "id": "z", "name": "z", "scenarios": [{",".join(scenarios)}]}}'
        )
        path = tmp_path / "z.json"
        path.write_text(text, encoding="utf-8")
        run = cl.run(path, agent, progress=False)
    finally:
        server.shutdown()
    got = [r.status == "passed" for r in run.results]
    assert got == [row[3] for row in ZERO_ROWS]
    first = run.results[0].turns[0].assertions[0]
    assert first.message == "response.data.v: expected equals -0, got 0"


def test_an_unregistered_evaluator_is_evaluator_not_found(tmp_path: Path) -> None:
    # runner.ts `assertEvaluators`: EvaluationError("EVALUATOR_NOT_FOUND") before any session
    custom = {"id": "c", "kind": "custom", "evaluator": "nobody-registered", "parameters": {}}
    doc = suite(scenario("a", step("s", {"text": "hi"}, assertions=[custom])))
    with pytest.raises(cl.SuiteError, match=r"\.evaluator: EVALUATOR_NOT_FOUND: unknown evaluator"):
        cl.run(write(tmp_path, doc), lambda messages: "ok", progress=False)
    result = cl.check(cl.Reply(text="hi"), custom)
    assert result.status == "error" and result.message.startswith("EVALUATOR_NOT_FOUND: ")


# The rules docs/intention-kernel.md states for a host adapter (any agent that is not
# `strict_input`): the selection reaches it as written (`ctx.input.selection`), and the option
# it picks reaches it as `ctx.metadata["selected_option"]` only when it resolves against the
# interaction the turn just before left open, to exactly one option.
SELECTION_RULES = [
    ({"optionIndex": 2}, TWO_LAMPS, {"id": "c", "label": "Desk"}),
    ({"optionId": "b"}, TWO_LAMPS, {"id": "b", "label": "Lamp"}),
    ({"optionLabel": "Desk"}, TWO_LAMPS, {"id": "c", "label": "Desk"}),
    ({"optionLabel": "Lamp"}, TWO_LAMPS, None),  # two options: ambiguous
    ({"optionLabel": "desk"}, TWO_LAMPS, None),  # labels compare exactly
    ({"optionIndex": 3}, TWO_LAMPS, None),  # out of range
    ({"optionIndex": 0}, {"kind": "choice", "options": [{"id": "a", "label": "A"}]}, None),
    ({"optionIndex": 0}, {"id": "q", "options": [{"id": "a"}]}, None),  # an option lacks a label
    ({"optionIndex": 0}, None, None),  # the turn before left no interaction
]


@pytest.mark.parametrize(("selector", "left_open", "picked"), SELECTION_RULES)
def test_when_a_selection_reaches_a_host_agent(
    tmp_path: Path, selector: dict[str, Any], left_open: Any, picked: Any
) -> None:
    seen: list[tuple[Any, Any]] = []

    def host(messages: list[dict[str, Any]], ctx: cl.AgentContext) -> cl.Reply:
        assert ctx.input is not None
        seen.append((ctx.input.selection, ctx.metadata.get("selected_option", "absent")))
        return cl.Reply(text="ok", interaction=left_open if ctx.turn == 0 else TWO_LAMPS)

    doc = suite(
        scenario(
            "host",
            step("offer", {"text": "Show me lamps"}),
            step("pick", {"text": "that one", "selection": selector}),
        )
    )
    run = cl.run(write(tmp_path, doc), host, progress=False)
    assert run.results[0].status == "passed"  # a host agent's selection never errs
    selection, chosen = seen[1]
    assert selection is not None
    assert chosen == (picked if picked is not None else "absent")


def test_a_selection_answers_only_the_turn_just_before(tmp_path: Path) -> None:
    seen: list[Any] = []

    def host(messages: list[dict[str, Any]], ctx: cl.AgentContext) -> cl.Reply:
        seen.append(ctx.metadata.get("selected_option"))
        return cl.Reply(text="ok", interaction=TWO_LAMPS if ctx.turn == 0 else None)

    doc = suite(
        scenario(
            "host",
            step("offer", {"text": "Show me lamps"}),
            step("pick", {"text": "the desk", "selection": {"optionLabel": "Desk"}}),
            step("again", {"text": "the desk", "selection": {"optionLabel": "Desk"}}),
        )
    )
    cl.run(write(tmp_path, doc), host, progress=False)
    assert seen == [None, {"id": "c", "label": "Desk"}, None]
