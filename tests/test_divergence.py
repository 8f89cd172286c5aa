"""Why a case is flaky (`run.divergence()`, `run.why()`, `stability()`'s paths): seeded agents
whose runs fork at a known turn, read back from a store, a save and a replay."""

from __future__ import annotations

import html

import pandas as pd
import pytest
from flaky_agents import (
    dynamic_case,
    filer,
    flaky_agent,
    flaky_suite,
    greet_case,
    greeter,
    opener,
)

import convlab as cl
from convlab._readable import pct
from convlab.analysis.stats import fisher_exact
from convlab.errors import UnknownNameError
from convlab.model import Case, Message, Suite

RUNS = 30


@pytest.fixture(scope="module")
def flaky_run() -> cl.Run:
    return cl.run(flaky_suite(), flaky_agent, runs=RUNS, progress=False)


def looked_up(run: cl.Run) -> tuple[int, int]:
    """(runs that called lookup_policy, how many of them passed), read from the records."""
    calls = run.tool_calls_df
    keys = set(calls.loc[calls["name"] == "lookup_policy", "run"])
    df = run.df[run.df["case_id"] == "expense-policy"]
    return len(keys), int(((df["status"] == "passed") & df["run"].isin(keys)).sum())


def test_a_step_skipped_in_some_runs_is_the_fork_that_decides(flaky_run):
    d = flaky_run.divergence("expense-policy")
    called, passed = looked_up(flaky_run)
    assert 0.4 * RUNS < called < 0.8 * RUNS and passed == called  # about 60%, and they pass
    assert list(d["branch"]) == [0, 1]
    assert list(d["fork_turn"]) == [1, 1]
    assert list(d["side"]) == ["agent", "agent"]
    assert list(d["runs"]) == [called, RUNS - called] and list(d["passed"]) == [called, 0]
    assert list(d["pass_rate"]) == [100.0, 0.0]
    assert list(d["step"]) == ["lookup_policy(amount, note)", "no tool call"]
    assert d["path"][0] == "turn 2: lookup_policy(amount, note) → turn 3: create_expense(amount)"
    assert d["path"][1] == "turn 2: no tool call → turn 3: create_expense(amount)"
    p = fisher_exact(called, 0, 0, RUNS - called)
    assert list(d["p_value"]) == [p, p] and list(d["p_holm"]) == [p, p] and p < 0.05
    assert list(d["main"]) == [True, False]
    why = flaky_run.why("expense-policy")
    assert why == (
        f"Runs that called lookup_policy at turn 2 passed {called} of {called}; runs that "
        f"skipped it passed 0 of {RUNS - called} (p < 0.001)."
    )


def test_reply_wording_no_check_reads_is_one_branch(flaky_run):
    d = flaky_run.divergence("greet")
    [row] = d.drop(columns=["p_value", "p_holm"]).to_dict("records")
    assert row == {
        "case_id": "greet", "branch": 0, "parent": None, "fork_turn": None, "side": "",
        "step": "", "runs": RUNS, "passed": RUNS, "pass_rate": 100.0, "main": True,
        "path": "no tool calls",
    }  # fmt: skip
    assert pd.isna(d["p_value"][0]) and pd.isna(d["p_holm"][0])
    stab = flaky_run.stability().set_index("case_id")
    assert stab.loc["greet", "paths"] == 1 and stab.loc["greet", "main_path_share"] == 1.0
    called, _ = looked_up(flaky_run)
    assert stab.loc["expense-policy", "paths"] == 2
    assert stab.loc["expense-policy", "main_path_share"] == called / RUNS
    assert flaky_run.why("greet") == f"All {RUNS} runs passed; they took one path."
    # the whole run: one line per flaky case
    assert flaky_run.why() == "expense-policy: " + flaky_run.why("expense-policy")
    assert list(flaky_run.divergence()["case_id"]) == ["expense-policy"] * 2 + ["greet"]


def test_wording_a_check_reads_is_a_fork_on_that_check():
    suite = Suite(id="s", cases=[greet_case("greet", "How can I help")])
    run = cl.run(suite, greeter, runs=12, progress=False)
    d = run.divergence("greet")
    assert len(d) == 2 and set(d["fork_turn"]) == {0}
    ok = d[d["pass_rate"] == 100.0].iloc[0]
    assert ok["step"] == "no tool call; checks: all passed"
    assert d[d["pass_rate"] == 0.0].iloc[0]["step"] == "no tool call; checks: contains failed"
    passed = int(d["passed"].sum())
    assert run.why("greet") == (
        f"Runs whose reply passed the check contains at turn 1 passed {passed} of {passed}; "
        f"runs whose reply failed it passed 0 of {12 - passed} (p = 0.002)."
    )


def test_a_case_check_outside_the_path_is_named_when_no_fork_explains():
    case = Case(
        id="c",
        mode="turns",
        turns=[{"input": {"text": "hi"}}],
        assertions=[{"kind": "contains", "value": "How can I help", "label": "offers help"}],
    )
    run = cl.run(Suite(id="s", cases=[case]), greeter, runs=12, progress=False)
    [row] = run.divergence("c").to_dict("records")
    passed = row["passed"]
    assert 0 < passed < 12 and row["runs"] == 12
    assert run.why("c") == (
        f"All 12 runs took the same path, yet {passed} passed: the difference is in what the "
        f"path does not record; the case check offers help passed in {passed} of 12 runs."
    )


def test_argument_values_split_runs_only_where_a_check_reads_them():
    def agent(messages, ctx):
        amount = 120 if ctx.instance.endswith("0") or ctx.instance.endswith("2") else 99
        return cl.Reply(text="ok", tool_calls=[cl.ToolCall("refund", {"amount": amount})])

    loose = Case(id="loose", input=[Message(content="refund")])
    strict = Case(
        id="strict",
        input=[Message(content="refund")],
        assertions=[
            {"kind": "tool_called", "value": {"name": "refund", "arguments": {"amount": 120}}}
        ],
    )
    run = cl.run(Suite(id="s", cases=[loose, strict]), agent, runs=6, progress=False)
    d = run.divergence().set_index(["case_id", "branch"])
    assert d.loc[("loose", 0), "path"] == "turn 1: refund(amount)"
    assert len(d.loc["loose"]) == 1 and len(d.loc["strict"]) == 2
    assert set(d.loc["strict", "step"]) == {"refund(amount=120)", "refund(amount=99)"}


def test_a_simulated_user_who_says_different_things_is_a_user_side_fork():
    suite = Suite(id="s", cases=[dynamic_case()])
    run = cl.run(suite, filer, simulator=opener, runs=16, progress=False)
    d = run.divergence("dynamic-expense")
    assert len(d) == 2 and list(d["side"]) == ["user", "user"] and set(d["fork_turn"]) == {0}
    by_rate = d.sort_values("pass_rate")
    assert list(by_rate["pass_rate"]) == [0.0, 100.0]
    assert by_rate["step"].iloc[1].startswith("user said “I need to file a travel expense”")
    why = run.why("dynamic-expense")
    assert why.startswith("Runs where the user said “I need to file a travel expense” at turn 1")
    assert "a fork on the user's side" in why


def test_holm_corrects_over_the_forks_of_a_case():
    def agent(messages, ctx):
        n = int(ctx.instance.split("#")[1]) if "#" in ctx.instance else 0  # "c #3": run 3
        tools = [cl.ToolCall("a", {})] if n % 2 else []
        if ctx.turn == 1 and n % 3 == 0:
            tools.append(cl.ToolCall("b", {}))
        return cl.Reply(text="x", tool_calls=tools)

    case = Case(id="c", mode="turns", turns=[{"input": {"text": "1"}}, {"input": {"text": "2"}}])
    run = cl.run(Suite(id="s", cases=[case]), agent, runs=12, progress=False)
    d = run.divergence("c")
    assert d["fork_turn"].min() == 0
    assert (d["p_holm"] >= d["p_value"]).all()
    nested = d[d["parent"].notna()]
    assert len(nested) and set(nested["fork_turn"]) == {1}


def test_an_unknown_case_is_named_with_a_suggestion(flaky_run):
    with pytest.raises(UnknownNameError, match="Did you mean 'greet'"):
        flaky_run.divergence("gret")
    with pytest.raises(UnknownNameError, match="unknown case"):
        flaky_run.why("nope")


@pytest.mark.parametrize("suffix", ["store", ".json", ".jsonl"])
def test_a_run_read_back_gives_the_same_divergence(tmp_path, suffix):
    if suffix == "store":
        path = tmp_path / "store.jsonl"
        run = cl.run(flaky_suite(), flaky_agent, runs=10, store=path, progress=False)
    else:
        run = cl.run(flaky_suite(), flaky_agent, runs=10, progress=False)
        path = run.save(tmp_path / f"run{suffix}")
    back = cl.load_run(path)
    pd.testing.assert_frame_equal(back.divergence(), run.divergence())
    pd.testing.assert_frame_equal(back.stability(), run.stability())
    assert back.why() == run.why()


def test_a_replayed_run_gives_the_same_divergence(tmp_path):
    agent = cl.cached(flaky_agent)
    first = cl.run(flaky_suite(), agent, runs=10, cache="record", cache_dir=tmp_path,
                   progress=False)  # fmt: skip
    again = cl.run(flaky_suite(), agent, runs=10, cache="replay", cache_dir=tmp_path,
                   progress=False)  # fmt: skip
    assert again.settings["cache"]["replayed"] > 0
    pd.testing.assert_frame_equal(again.divergence(), first.divergence())


def test_the_run_card_says_why_a_flaky_case_fails(flaky_run):
    text = str(flaky_run)
    assert "expense-policy" in text and flaky_run.why("expense-policy") in text
    html = flaky_run._repr_mimebundle_()["text/html"]
    assert "Runs that called lookup_policy at turn 2 passed" in html


def test_the_chart_draws_the_tree_from_every_run_to_passed_or_not(flaky_run):
    fig = flaky_run.plot.divergence("expense-policy")
    called, _ = looked_up(flaky_run)
    [sankey] = fig.data
    assert sankey.type == "sankey"
    labels = list(sankey.node.label)
    assert labels[0] == f"all 30 runs · {pct(100 * called / RUNS)} passed"
    assert labels[1] == f"turn 2: lookup_policy(amount, note) · {called} runs · 100.0%"
    assert labels[2] == f"turn 2: no tool call · {RUNS - called} runs · 0.0%"
    assert labels[3:] == [f"passed: {called}", f"did not pass: {RUNS - called}"]
    links = sorted(zip(sankey.link.source, sankey.link.target, sankey.link.value, strict=True))
    assert links == [(0, 1, called), (0, 2, RUNS - called), (1, 3, called), (2, 4, RUNS - called)]
    assert "turn 3: create_expense(amount)" in sankey.node.customdata[1]
    assert "lookup_policy" in fig.layout.title.text
    with pytest.raises(UnknownNameError):
        flaky_run.plot.divergence("nope")


def test_what_a_user_said_is_escaped_in_the_chart():
    def sim(messages, ctx):
        return "<b>bold</b> <script>alert(1)</script>" if "#1" in ctx.instance else "hi"

    run = cl.run(Suite(id="s", cases=[dynamic_case()]), filer, simulator=sim, runs=4,
                 progress=False)  # fmt: skip
    sankey = run.plot.divergence("dynamic-expense").data[0]
    text = " ".join([*sankey.node.label, *sankey.node.customdata])
    assert "<script>" not in text and "<b>bold" not in text
    assert "&lt;script&gt;" in text


def test_in_a_notebook_one_case_shows_a_passing_and_a_failing_run_side_by_side(flaky_run):
    bundle = flaky_run.divergence("expense-policy")._repr_mimebundle_()
    page = bundle["text/html"]
    assert (
        "Divergence of expense-policy · branches" in page
        and html.escape(flaky_run.why("expense-policy")) in page
    )
    table = page[page.index("<table class='cl-sxs'>") :]
    rows = table.split("<tr")
    fork = [r for r in rows if "cl-fork" in r]
    assert len(fork) == 1 and "turn 2" in fork[0] and ">fork<" in fork[0]
    assert "cl-only-ok" in fork[0] and "lookup_policy(" in fork[0]  # the call only one made
    assert "✓ passed" in table and "✗ failed" in table
    text = bundle["text/plain"]
    assert "turn 2  <- fork: lookup_policy(" in text and "no tool call" in text
    # every case: the branches only
    whole = flaky_run.divergence()._repr_mimebundle_()["text/html"]
    assert "<table class='cl-sxs'>" not in whole  # (the stylesheet may name the class)


def test_the_side_by_side_escapes_what_agents_said():
    def agent(messages, ctx):
        if "#" in ctx.instance and int(ctx.instance.split("#")[1]) % 2:
            return "<script>alert(1)</script> <img src=x onerror=alert(2)>"
        return cl.Reply(text="ok", tool_calls=[cl.ToolCall("<b>tool</b>", {"<i>": 1})])

    case = Case(id="c", input=[Message(content="<svg onload=alert(3)>")],
                assertions=[{"kind": "tool_called", "value": "tool"}])  # fmt: skip
    run = cl.run(Suite(id="s", cases=[case]), agent, runs=4, progress=False)
    page = run.divergence("c")._repr_mimebundle_()["text/html"]
    for raw in ("<script>alert", "<img src", "<svg onload", "<b>tool", "<i>"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)" in page and "&lt;b&gt;tool&lt;/b&gt;" in page


def test_an_experiment_says_where_each_variant_leaves_the_baselines_main_path():
    def steady(messages, ctx):
        if ctx.turn == 1:
            ctx.world["policy_checked"] = True
            call = cl.ToolCall("lookup_policy", {"amount": 120, "note": 0})
            return cl.Reply(text="The policy allows it.", tool_calls=[call])
        return flaky_agent(messages, ctx)

    exp = cl.run(flaky_suite(), {"steady": steady, "flaky": flaky_agent}, runs=12,
                 progress=False, history=False)  # fmt: skip
    d = exp.divergence("expense-policy")
    assert d.attrs["main_path"] == (
        "turn 2: lookup_policy(amount, note) → turn 3: create_expense(amount)"
    )
    rows = d.drop(columns=["case_id"]).to_dict("records")
    flaky = exp["flaky"].divergence("expense-policy")
    called, skipped = int(flaky["runs"][0]), int(flaky["runs"][1])
    assert rows[0] == {
        "agent_variant": "steady", "leaves_at": None, "side": "", "step": "", "runs": 12,
        "passed": 12, "pass_rate": 100.0, "share": 100.0,
    }  # fmt: skip
    assert rows[1]["agent_variant"] == "flaky" and rows[1]["leaves_at"] is None
    assert (rows[1]["runs"], rows[1]["passed"]) == (called, called)
    assert rows[2] == {
        "agent_variant": "flaky", "leaves_at": 1, "side": "agent", "step": "no tool call",
        "runs": skipped, "passed": 0, "pass_rate": 0.0, "share": 100 * skipped / 12,
    }  # fmt: skip
    page = d._repr_mimebundle_()["text/html"]
    assert "Divergence across variants" in page and "main path" in page
