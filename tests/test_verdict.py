"""`verdict` says in plain words what Yao's stability class cannot: one run, or always/never."""

from __future__ import annotations

import zlib
from typing import Any

import convlab as cl
from convlab.analysis.stats import verdict


def test_verdict_words() -> None:
    assert verdict(1, 0) == verdict(1, 1) == "one run"
    assert verdict(5, 5) == "always passes"
    assert verdict(5, 0) == "always fails"
    assert verdict(5, 3) == "flaky"
    assert verdict(0, 0) == ""


def _flaky(messages: list[dict[str, Any]], ctx: Any) -> str:
    if ctx.case.id == "sometimes":
        return "ok" if zlib.crc32(ctx.instance.encode()) % 2 else "no"
    return "ok" if ctx.case.id == "always" else "no"


SUITE = cl.Suite(
    id="v",
    cases=[
        cl.Case(
            id=cid,
            input=[cl.Message(content="hi")],
            assertions=[{"kind": "equals", "value": "ok"}],
        )
        for cid in ("always", "never", "sometimes")
    ],
)


def test_a_case_that_always_fails_and_one_run_once_differ() -> None:
    many = cl.run(SUITE, _flaky, runs=6, progress=False).stability().set_index("case_id")
    once = cl.run(SUITE, _flaky, progress=False).stability().set_index("case_id")
    assert many.loc["never", "classification"] == once.loc["never", "classification"]
    assert many.loc["never", "verdict"] == "always fails"
    assert once.loc["never", "verdict"] == "one run"
    assert many.loc["always", "verdict"] == "always passes"
    assert many.loc["sometimes", "verdict"] == "flaky"


def test_the_card_names_the_verdict() -> None:
    run = cl.run(SUITE, _flaky, runs=6, progress=False)
    assert "never  0.0% always fails" in str(run)
    assert "sometimes  33.3% highly unstable" in str(run)
    page = run._repr_mimebundle_()["text/html"]
    assert "<td>always fails</td>" in page and "highly_unstable" not in page


def test_a_reached_checkpoint_carries_the_message_that_reached_it() -> None:
    """checkpoints_df used to keep an earlier turn's 'not yet' message on a passed row."""
    run = cl.run("examples/expense", "demo:expense", progress=False)
    df = run.checkpoints_df
    reached = df[df["reached"]]
    assert len(reached) >= 5
    for message in reached["message"]:
        assert "not" not in message and "no tools" not in message, message
    call = df[(df["case_id"] == "expense-dynamic") & (df["checkpoint"] == "call_create")]
    assert call["message"].item() == "tool 'create_expense' was called with matching arguments"
