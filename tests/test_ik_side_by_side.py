"""A suite run side by side: convlab against intention-kernel's own runner.

The 36 scenarios below (37 cases) were run by the kernel's `runEvaluation` (runner.ts) with
`createAgentEvaluationAdapter` (agentAdapter.ts) around a test agent, all @923d4314 under
Node 20 + tsx + zod 4.6.7 (checkpoint publishing and resume left out: a fresh run takes
neither path). `EXPECTED` is its report. Here the same suite runs in convlab against the
same agent written in Python, and every case must agree on status, code and turn statuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import convlab as cl
from convlab.engine.suite_checks import suite_summary

AMB, UNAV = "EVALUATION_SELECTION_AMBIGUOUS", "EVALUATION_SELECTION_UNAVAILABLE"
INV = "EVALUATION_AGENT_INPUT_INVALID"
OPTIONS = [{"id": "a", "label": "Lamp"}, {"id": "b", "label": "Lamp"}, {"id": "c", "label": "Desk"}]


def chk(i: str, path: list[Any], op: str, value: Any = None) -> dict[str, Any]:
    d: dict[str, Any] = {"id": i, "kind": "check", "path": path, "operator": op}
    if value is not None:
        d["value"] = value
    return d


def sc(i: str, *steps: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"id": i, "name": i, "writePolicy": "read_only", "steps": list(steps), **kw}


def st(
    i: str, text: str | None = None, inp: Any = None, a: Any = None, **kw: Any
) -> dict[str, Any]:
    d = {"id": i, "input": inp if inp is not None else {"text": text}, **kw}
    if a:
        d["assertions"] = a
    return d


def cust(i: str, e: str, **p: Any) -> dict[str, Any]:
    return {"id": i, "kind": "custom", "evaluator": e, "parameters": p}


TXT = ["response", "text"]
FACT = ["checkpoint", "facts", 0, "productId"]
scen = [
    sc("pass", st("a", "hi", a=[chk("t", TXT, "equals", "echo: hi")])),
    sc("fail", st("a", "hi", a=[chk("t", TXT, "equals", "nope")])),
    sc(
        "fail-then-go",
        st("a", "hi", a=[chk("t", TXT, "equals", "x")]),
        st("b", "two", a=[chk("t", TXT, "contains", "two")]),
    ),
    sc(
        "final-pass", st("a", "hi"), st("b", "yo"), assertions=[chk("f", TXT, "equals", "echo: yo")]
    ),
    sc("final-fail", st("a", "hi"), assertions=[chk("f", TXT, "equals", "zz")]),
    sc(
        "fail-and-final",
        st("a", "hi", a=[chk("t", TXT, "equals", "x")]),
        assertions=[chk("f", TXT, "exists")],
    ),
    sc("transport", st("a", "hi"), st("b", "boom"), st("c", "never")),
    sc(
        "pick-index",
        st("a", "choose"),
        st(
            "b",
            inp={"text": "x", "selection": {"optionIndex": 2}},
            a=[chk("p", FACT, "equals", "c")],
        ),
    ),
    sc(
        "pick-id",
        st("a", "choose"),
        st(
            "b",
            inp={"text": "x", "selection": {"optionId": "b"}},
            a=[chk("p", FACT, "equals", "b")],
        ),
    ),
    sc(
        "pick-out-of-range",
        st("a", "choose"),
        st("b", inp={"text": "x", "selection": {"optionIndex": 5}}),
    ),
    sc(
        "pick-two-labels",
        st("a", "choose"),
        st("b", inp={"text": "x", "selection": {"optionLabel": "Lamp"}}),
    ),
    sc(
        "pick-unknown-label",
        st("a", "choose"),
        st("b", inp={"text": "x", "selection": {"optionLabel": "Chair"}}),
    ),
    sc(
        "pick-no-interaction",
        st("a", "hi"),
        st("b", inp={"text": "x", "selection": {"optionIndex": 0}}),
    ),
    sc("pick-no-id", st("a", "noid"), st("b", inp={"text": "x", "selection": {"optionIndex": 0}})),
    sc("pick-first-turn", st("a", inp={"text": "x", "selection": {"optionId": "a"}})),
    sc("input-extra", st("a", "hi"), st("b", inp={"text": "x", "locale": "en"})),
    sc("input-no-text", st("a", inp={})),
    sc(
        "input-two-selectors",
        st("a", "choose"),
        st("b", inp={"text": "", "selection": {"optionIndex": 0, "optionId": "a"}}),
    ),
    sc(
        "input-negative",
        st("a", "choose"),
        st("b", inp={"text": "", "selection": {"optionIndex": -1}}),
    ),
    sc("input-long", st("a", "t" * 10001)),
    sc("input-emoji-ok", st("a", "😀" * 10000, a=[chk("l", TXT, "length", 20006)])),
    sc(
        "variants",
        st(
            "a",
            "hi",
            variants=[
                {"id": "v1", "input": {"text": "one"}},
                {"id": "v2", "input": {"text": "two", "x": 1}},
            ],
            a=[chk("t", TXT, "equals", "echo: one")],
        ),
    ),
    sc("eval-raises", st("a", "hi", a=[cust("c", "raises")])),
    sc("eval-invalid", st("a", "hi"), assertions=[cust("c", "invalid")]),
    sc("eval-pass", st("a", "hi", a=[cust("c", "says", word="hi")])),
    sc("eval-fail", st("a", "hi", a=[cust("c", "says", word="zz")])),
    sc(
        "not-error", st("a", "hi", a=[{"id": "n", "kind": "not", "assertion": cust("c", "raises")}])
    ),
    sc(
        "any-error",
        st(
            "a",
            "hi",
            a=[
                {
                    "id": "n",
                    "kind": "any",
                    "assertions": [chk("t", TXT, "exists"), cust("c", "raises")],
                }
            ],
        ),
    ),
    sc(
        "not-pass",
        st("a", "hi", a=[{"id": "n", "kind": "not", "assertion": chk("t", TXT, "equals", "x")}]),
    ),
    sc(
        "ids",
        st(
            "a",
            "hi",
            a=[
                chk(p, [p], "exists")
                for p in ("threadId", "turnId", "traceId", "replayed", "events")
            ]
            + [chk("r", ["replayed"], "equals", False), chk("e", ["events"], "length", 0)],
        ),
    ),
    sc("history", st("a", "hi"), st("b", "yo"), assertions=[cust("c", "history", n=2)]),
    sc("skip", st("a", "hi"), skipReason="later"),
    {**sc("external", st("a", "hi")), "writePolicy": "external"},
    sc(
        "nested-contains",
        st(
            "a",
            "choose",
            a=[
                chk("c", ["response", "interaction", "options"], "contains", {"label": "Desk"}),
                chk("m", ["checkpoint"], "matches", {"facts": []}),
            ],
        ),
    ),
    sc(
        "missing-null",
        st(
            "a",
            "hi",
            a=[
                {
                    "id": "n",
                    "kind": "check",
                    "path": ["response", "nothing"],
                    "operator": "equals",
                    "value": None,
                }
            ],
        ),
    ),
    sc(
        "gte",
        st("a", "hi", a=[chk("g", ["checkpoint", "facts"], "length", 0), chk("x", TXT, "gte", 1)]),
    ),
]
SUITE = {
    "schemaVersion": 1,
    "id": "side",
    "name": "Side by side",
    "scenarios": scen,
    "assertions": [
        chk("pending", ["summary", "pending"], "equals", 0),
        chk("total", ["summary", "total"], "equals", 37),
        chk("state", ["status"], "equals", "completed"),
    ],
}
EXPECTED = [
    ("pass", "", "passed", None, ("passed",)),
    ("fail", "", "failed", None, ("failed",)),
    ("fail-then-go", "", "failed", None, ("failed", "passed")),
    ("final-pass", "", "passed", None, ("passed", "passed")),
    ("final-fail", "", "failed", None, ("passed",)),
    ("fail-and-final", "", "failed", None, ("failed",)),
    ("transport", "", "error", "EVALUATION_TRANSPORT_FAILED", ("passed", "error")),
    ("pick-index", "", "passed", None, ("passed", "passed")),
    ("pick-id", "", "passed", None, ("passed", "passed")),
    ("pick-out-of-range", "", "error", AMB, ("passed", "error")),
    ("pick-two-labels", "", "error", AMB, ("passed", "error")),
    ("pick-unknown-label", "", "error", AMB, ("passed", "error")),
    ("pick-no-interaction", "", "error", UNAV, ("passed", "error")),
    ("pick-no-id", "", "error", UNAV, ("passed", "error")),
    ("pick-first-turn", "", "error", UNAV, ("error",)),
    ("input-extra", "", "error", INV, ("passed", "error")),
    ("input-no-text", "", "error", INV, ("error",)),
    ("input-two-selectors", "", "error", INV, ("passed", "error")),
    ("input-negative", "", "error", INV, ("passed", "error")),
    ("input-long", "", "error", INV, ("error",)),
    ("input-emoji-ok", "", "passed", None, ("passed",)),
    ("variants", "a=v1", "passed", None, ("passed",)),
    ("variants", "a=v2", "error", INV, ("error",)),
    ("eval-raises", "", "error", "EVALUATOR_FAILED", ("error",)),
    ("eval-invalid", "", "error", "EVALUATOR_RESULT_INVALID", ("passed",)),
    ("eval-pass", "", "passed", None, ("passed",)),
    ("eval-fail", "", "failed", None, ("failed",)),
    ("not-error", "", "error", "EVALUATOR_FAILED", ("error",)),
    ("any-error", "", "error", "EVALUATOR_FAILED", ("error",)),
    ("not-pass", "", "passed", None, ("passed",)),
    ("ids", "", "passed", None, ("passed",)),
    ("history", "", "passed", None, ("passed", "passed")),
    ("skip", "", "skipped", None, ()),
    ("external", "", "blocked", "EXTERNAL_WRITES_NOT_AUTHORIZED", ()),
    ("nested-contains", "", "passed", None, ("passed",)),
    ("missing-null", "", "failed", None, ("failed",)),
    ("gte", "", "failed", None, ("failed",)),
]
"""What intention-kernel's runEvaluation reported per case: scenario, variant, status, code
(the case's errorCode, else its first turn or assertion errorCode), turn statuses."""
SUMMARY = {
    "total": 37,
    "pending": 0,
    "running": 0,
    "passed": 11,
    "failed": 7,
    "error": 17,
    "skipped": 1,
    "blocked": 1,
    "cancelled": 0,
}


def agent(messages: list[dict[str, Any]], ctx: cl.AgentContext) -> cl.Reply:
    """The test agent the kernel's run used (there a CompiledAgent's `run`)."""
    text = ctx.input.text if ctx.input else messages[-1]["content"]
    if text == "boom":
        raise RuntimeError("agent crashed")
    chosen = ctx.metadata.get("selected_option")
    if chosen:
        fact = {"type": "product.selected", "productId": chosen["id"]}
        return cl.Reply(text=f"selected {chosen['id']}", facts=[fact])
    if text == "choose":
        return cl.Reply(
            text="pick one", interaction={"id": "pick-1", "kind": "choice", "options": OPTIONS}
        )
    if text == "noid":  # an interaction without an id: interactionSchema refuses it
        return cl.Reply(text="pick one", interaction={"kind": "choice", "options": OPTIONS})
    return cl.Reply(text=f"echo: {text}")


def test_every_case_agrees_with_the_kernels_runner(tmp_path: Path, register_evaluator: Any) -> None:
    @register_evaluator("raises")
    def raises(ctx: Any, p: dict[str, Any]) -> bool:
        raise RuntimeError("private")

    @register_evaluator("invalid")
    def invalid(ctx: Any, p: dict[str, Any]) -> dict[str, Any]:
        return {"passed": "yes"}

    @register_evaluator("says")
    def says(ctx: Any, p: dict[str, Any]) -> dict[str, Any]:
        return {"passed": p["word"] in (ctx.observation.text or "")}

    @register_evaluator("history")
    def history(ctx: Any, p: dict[str, Any]) -> dict[str, Any]:
        return {"passed": len(ctx.history) == p["n"]}

    path = tmp_path / "side.json"
    path.write_text(json.dumps(SUITE, ensure_ascii=False), encoding="utf-8")
    # the kernel's run put the agent behind its direct adapter (createAgentEvaluationAdapter)
    run = cl.run(path, cl.agents.function(agent, strict_input=True), progress=False)
    got = [
        (
            r.case_id,
            ",".join(f"{k}={v}" for k, v in r.variant.items()),
            r.status,
            r.code,
            tuple(t.status for t in r.turns),
        )
        for r in run.results
    ]
    assert got == EXPECTED
    assert [a.status for a in run.suite_assertions] == ["passed"] * 3
    assert suite_summary(run.results) == SUMMARY  # what suite checks read as `summary`
