"""Variants in one call: `cl.run(suite, {name: agent, ...})` runs every variant under one
`parallel` and returns an Experiment. The agents are OpenAI-compatible clients of a real
`serve-demo` server on 127.0.0.1; each variant's Run is what a run of it alone gives, the
leaderboard's figures match a hand computation (Holm included), and what changed in the agent
is shown, a system prompt word by word and escaped."""

from __future__ import annotations

import html
import io
import json
import math
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.agents.serve import DemoServer
from convlab.engine.events import CaseStarted, ExperimentFinished, ExperimentStarted, VariantEvent

EXPENSE = Path(__file__).resolve().parent.parent / "examples" / "expense"

_calls: Counter[str] = Counter()
_lock = threading.Lock()


def good(messages: list[dict[str, Any]]) -> str:
    return f"ok: {messages[-1]['content']}"


def bad(messages: list[dict[str, Any]]) -> str:
    """Fails c1 and c2 on every run, passes the others."""
    text = messages[-1]["content"]
    return "no" if text in ("q1", "q2") else f"ok: {text}"


def mixed(messages: list[dict[str, Any]]) -> str:
    """Fails c1 every run, and c3 on every second call (its count is fixed, whichever runs)."""
    text = messages[-1]["content"]
    with _lock:
        _calls[text] += 1
        n = _calls[text]
    if text == "q1" or (text == "q3" and n % 2 == 0):
        return "no"
    return f"ok: {text}"


def terse(messages: list[dict[str, Any]], ctx: Any) -> str:
    """The served agent's answer depends on the system prompt it is sent."""
    brief = "brief" in (ctx.instructions or "")
    return "Hello!" if brief else f"Hello! You said: {messages[-1]['content']}"


@pytest.fixture(scope="module")
def base() -> Any:
    with DemoServer({"good": good, "bad": bad, "mixed": mixed, "terse": terse}) as url:
        yield url


@pytest.fixture(scope="module")
def demos() -> Any:
    with DemoServer() as url:  # the built-in demo agents, as models
        yield url


def small_suite(tmp_path: Path) -> cl.Suite:
    lines = [
        json.dumps({"id": f"c{i}", "input": f"q{i}", "assert": {"type": "contains", "value": "ok"}})
        for i in (1, 2, 3, 4)
    ]
    (tmp_path / "small.jsonl").write_text("\n".join(lines) + "\n")
    return cl.load(tmp_path / "small.jsonl")


def agent(url: str, model: str, **kw: Any) -> Any:
    return cl.agents.openai(model, base_url=url, api_key="k", **kw)


def _instances(run: cl.Run) -> dict[tuple[Any, ...], Any]:
    """What a user compares between two runs of one agent: per instance its status, the
    texts sent and received, and every check's verdict and message."""
    out = {}
    for r in run.results:
        turns = [
            (
                [m.text() for m in t.messages],
                t.observation.text if t.observation else None,
                [(a.kind, a.status, a.message) for a in t.assertions],
            )
            for t in r.turns
        ]
        checks = [(a.kind, a.status, a.message) for a in r.assertions]
        cps = [(c.id, c.reached, c.passed) for c in r.checkpoints]
        out[r.key] = (r.status, r.error, turns, checks, cps)
    return out


def test_each_variant_gives_what_a_run_of_it_alone_gives(demos: str) -> None:
    variants = {
        "demo": lambda: agent(demos, "demo:expense", system="You file expenses."),
        "finance": lambda: agent(demos, "demo:finance"),
        "terse": lambda: agent(demos, "demo:expense", system="Be brief.", temperature=0),
    }
    exp = cl.run(
        EXPENSE, {k: make() for k, make in variants.items()}, runs=2, parallel=3, progress=False
    )
    assert isinstance(exp, cl.Experiment)
    assert exp.variants == ["demo", "finance", "terse"]
    for name, make in variants.items():
        alone = cl.run(EXPENSE, make(), runs=2, parallel=3, progress=False)
        together = exp[name]
        assert _instances(together) == _instances(alone), name
        assert together.summary["passed"] == alone.summary["passed"]
        assert together.agent_settings == alone.agent_settings
    assert exp["demo"].summary["passed"] == 20  # the two cases that fail on purpose, twice
    assert exp["finance"].summary["passed"] < 20  # another agent fails the expense cases


def test_the_variants_take_turns_from_the_first_instance() -> None:
    """With parallel=2 and three variants, the third starts as soon as the first slot frees:
    none waits for another variant to finish its cases."""
    started: list[str] = []

    def listen(event: Any) -> None:
        if isinstance(event, VariantEvent) and isinstance(event.event, CaseStarted):
            started.append(event.variant)

    exp = cl.run(
        EXPENSE,
        {"a": "demo:expense", "b": "demo:expense", "c": "demo:expense"},
        parallel=2,
        progress=listen,
    )
    assert sorted(started[:3]) == ["a", "b", "c"]
    assert started[:6].count("a") <= 2
    assert all(len(run.results) == 12 for run in exp.runs.values())


def test_lanes_hand_slots_out_in_turn() -> None:
    import asyncio

    from convlab.engine.lanes import Lanes

    order: list[int] = []

    async def main() -> None:
        lanes = Lanes(1, 3)

        async def work(lane: int) -> None:
            for _ in range(3):
                async with lanes.slot(lane):
                    order.append(lane)
                    await asyncio.sleep(0)

        await asyncio.gather(work(0), work(1), work(2))

    asyncio.run(main())
    assert order == [0, 1, 2] * 3


def _fisher(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher's exact test, written out: tables no more likely than the observed."""
    n1, n2, k = a + b, c + d, a + c
    prob = {
        x: math.comb(n1, x) * math.comb(n2, k - x) / math.comb(n1 + n2, k)
        for x in range(max(0, k - n2), min(n1, k) + 1)
    }
    return min(1.0, sum(p for p in prob.values() if p <= prob[a] * (1 + 1e-9)))


def _wilson(c: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = c / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if c == 0 else centre - margin, 1.0 if c == n else centre + margin)


def test_the_leaderboard_matches_a_hand_computation(base: str, tmp_path: Path) -> None:
    _calls.clear()
    suite = small_suite(tmp_path)
    exp = cl.run(
        suite,
        {"good": agent(base, "good"), "bad": agent(base, "bad"), "mixed": agent(base, "mixed")},
        runs=6,
        parallel=4,
        progress=False,
    )
    lb = exp.leaderboard()
    rows = {r["agent_variant"]: r for r in lb.to_dict("records")}
    assert list(lb["agent_variant"]) == ["good", "mixed", "bad"]  # best pass rate first
    # per case, passes out of 6: good 6,6,6,6; bad 0,0,6,6; mixed 0,6,3,6
    passes = {"good": [6, 6, 6, 6], "bad": [0, 0, 6, 6], "mixed": [0, 6, 3, 6]}
    for name, cs in passes.items():
        r = rows[name]
        assert r["pass_rate"] == pytest.approx(sum(100 * c / 6 for c in cs) / 4)
        assert (r["runs"], r["passed"]) == (24, sum(cs))
        low, high = _wilson(sum(cs), 24)
        assert (r["ci_low"], r["ci_high"]) == (pytest.approx(100 * low), pytest.approx(100 * high))
        assert r["stable"] == sum(c == 6 for c in cs)
        assert r["highly_unstable"] == sum(0 < c < 3 for c in cs)
        assert r["always_fails"] == sum(c == 0 for c in cs)  # never called unstable
        assert r["unstable"] == sum(c == 3 for c in cs)
        turns = exp[name].turns_df
        assert r["total_tokens"] == turns["total_tokens"].sum() > 0
        lat = sorted(turns["latency_ms"])  # 24 replies: linear interpolation between ranks
        assert len(lat) == 24
        assert r["latency_p50_ms"] == pytest.approx((lat[11] + lat[12]) / 2)
        assert r["latency_p95_ms"] == pytest.approx(lat[21] + 0.85 * (lat[22] - lat[21]))
        assert math.isnan(r["cost_usd"]) or r["cost_usd"] >= 0
    # per case against the baseline, Holm over the two variants (m = 2)
    p_all = _fisher(6, 0, 0, 6)  # 6/6 against 0/6
    p_c3 = _fisher(6, 0, 3, 3)
    # c1: both variants p_all -> both 2 * p_all; c2: bad p_all, mixed 1 -> 2 * p_all, 1;
    # c3: bad 1, mixed p_c3 -> mixed min(1, 2 * p_c3) (not beyond noise: 2 * 0.18 > 0.05)
    assert 2 * p_all < 0.05 < 2 * p_c3
    assert (rows["bad"]["cases_worse"], rows["bad"]["cases_better"]) == (2, 0)
    assert (rows["mixed"]["cases_worse"], rows["mixed"]["cases_better"]) == (1, 0)
    assert rows["good"]["baseline"] and pd_isna(rows["good"]["cases_worse"])
    # pooled: 24/24 against 12/24 (bad) and 15/24 (mixed), then Holm over the two
    p_bad, p_mixed = _fisher(24, 0, 12, 12), _fisher(24, 0, 15, 9)
    assert rows["bad"]["pooled_p"] == pytest.approx(p_bad)
    assert rows["mixed"]["pooled_p"] == pytest.approx(p_mixed)
    low, high = sorted([p_bad, p_mixed])
    holm = {low: 2 * low, high: max(2 * low, high)}
    assert rows["bad"]["pooled_p_holm"] == pytest.approx(holm[p_bad])
    assert rows["mixed"]["pooled_p_holm"] == pytest.approx(holm[p_mixed])
    assert rows["bad"]["delta_pp"] == pytest.approx(-50.0)
    assert "Holm" in lb.attrs["note"] and "Fisher" in lb.attrs["note"]
    # two tests, named apart (a case's own test; all runs pooled) and told apart in the caption
    named = {"cases_better", "cases_worse", "pooled_p", "pooled_p_holm", "pooled_beyond_noise"}
    assert named <= set(lb.columns)
    assert not {"better", "worse", "p_value", "p_holm", "beyond_noise"} & set(lb.columns)
    note = lb.attrs["note"]
    assert "cases better / cases worse count the cases whose own test is beyond noise" in note
    assert "test all of a variant's runs together" in note and "can differ" in note
    page = lb._repr_mimebundle_()["text/html"]
    assert "pooled: beyond noise" in page and "cases better" in page and "can differ" in page
    # another baseline, by name
    other = exp.leaderboard(baseline="bad")
    assert other.attrs["baseline"] == "bad"
    assert dict(zip(other["agent_variant"], other["cases_better"], strict=True))["good"] == 2
    with pytest.raises(KeyError, match="mixed"):
        exp.leaderboard(baseline="mixd")
    # the matrix: case x variant pass rates
    matrix = exp.matrix().df
    assert list(matrix.columns[:4]) == ["case_id", "good", "bad", "mixed"]
    assert list(matrix["mixed"]) == [0.0, 100.0, 50.0, 100.0]
    assert list(matrix["spread_pp"]) == [100.0, 100.0, 50.0, 0.0]


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_holm_step_down() -> None:
    from convlab.analysis.leaderboard import holm

    got = holm([0.01, 0.04, 0.03, math.nan, 0.005])
    # sorted 0.005, 0.01, 0.03, 0.04 with m = 4: 0.02, 0.03, 0.06, max(0.06, 0.04)
    assert got[4] == pytest.approx(0.02) and got[0] == pytest.approx(0.03)
    assert got[2] == pytest.approx(0.06) and got[1] == pytest.approx(0.06)
    assert math.isnan(got[3])


def test_what_changed_in_the_agent_is_shown_and_escaped(base: str, tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    before = "You are brief. <script>alert('x')</script> Answer in one line."
    after = "You are very brief. <script>alert('x')</script> Answer in one short line."
    exp = cl.run(
        suite,
        {
            "a": agent(base, "terse", system=before, temperature=0.2),
            "b": agent(base, "terse", system=after, temperature=0.7),
        },
        progress=False,
    )
    changes = exp.changes()
    assert set(changes["setting"]) == {"system", "params.temperature"}
    temp = changes[changes["setting"] == "params.temperature"].iloc[0]
    assert (temp["before"], temp["after"]) == (0.2, 0.7)
    cmp = exp.compare("a", "b")
    assert "params.temperature 0.2 → 0.7" in cmp.summary
    assert "system: 0 word(s) removed, 2 added" in cmp.summary
    assert set(cmp.agent_changes["setting"]) == {"system", "params.temperature"}
    for page in (
        cmp._repr_mimebundle_()["text/html"],
        exp._repr_mimebundle_()["text/html"],
        exp.leaderboard()._repr_mimebundle_()["text/html"],
    ):
        assert "<script>alert" not in page
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
        assert "<ins>very </ins>" in page and "<ins>short </ins>" in page
    from convlab.analysis.agent_diff import word_diff_text

    assert word_diff_text("a b c", "a x c") == "a [-b-] {+x+} c"


@pytest.mark.parametrize(
    ("before", "after", "read"),
    [
        ("You are an expense assistant.", "You are an Expense assistant.", "expense Expense"),
        ("Be short.", "You are an expense assistant.", "Be short. You are"),
        ("Be short. Help.", "Be brief. Help.", "short. brief. Help."),
        ("a b", "a b c", "b b c"),
    ],
)
def test_a_prompt_diff_keeps_removed_and_added_words_apart(
    before: str, after: str, read: str
) -> None:
    from convlab.analysis.agent_diff import word_diff_text
    from convlab.notebook._experiment_view import prompt_diff_html

    shown = re.sub(r"<[^>]+>", "", prompt_diff_html(before, after))  # what the page reads
    assert read in html.unescape(shown)
    assert read in re.sub(r"\[-|-\]|\{\+|\+\}", "", word_diff_text(before, after))


def test_save_load_report_and_a_store_per_variant(base: str, tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    variants = {"good": agent(base, "good"), "b/ad": agent(base, "bad")}
    store = tmp_path / "out.jsonl"
    exp = cl.run(suite, variants, runs=2, store=store, experiment="store test", progress=False)
    assert exp.name == "store test"
    stores = exp.settings["stores"]
    assert stores == {
        "good": str(tmp_path / "out.good.jsonl"),
        "b/ad": str(tmp_path / "out.b_ad.jsonl"),
    }
    for name, path in stores.items():
        assert cl.load_run(path).df["status"].tolist() == exp[name].df["status"].tolist()
    with pytest.raises(cl.ConvlabError, match="already exists"):
        cl.run(suite, variants, store=store, progress=False)
    saved = exp.save(tmp_path / "exp.json")
    back = cl.load_experiment(saved)
    assert (back.id, back.name, back.variants) == (exp.id, exp.name, exp.variants)
    for name in exp:
        assert back[name].df.equals(exp[name].df)
    assert back.leaderboard().equals(exp.leaderboard())
    with pytest.raises(cl.SuiteError, match="load_experiment"):
        cl.load_run(saved)
    md = exp.save(tmp_path / "exp.md").read_text()
    assert "| good (baseline) | 100.0% |" in md and "b/ad" in md
    page = exp.save(tmp_path / "exp.html").read_text()
    assert page.count("data-convlab-bundle") == 1 and "Plotly.newPlot" in page
    from convlab.cli import main

    assert main(["report", str(saved), "-o", str(tmp_path / "again.md")]) == 0
    assert (tmp_path / "again.md").read_text() == md


def test_the_cli_runs_variants_and_prints_the_leaderboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from convlab.cli import main

    out = tmp_path / "exp.json"
    code = main(
        [
            "run",
            "-i",
            str(EXPENSE),
            "-n",
            "a=demo:expense",
            "-n",
            "demo:finance",
            "--runs",
            "2",
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1  # some cases fail on purpose
    assert "Leaderboard" in err and "demo:finance" in err and "a (baseline)" in err
    assert "[a · expense-greeting" in err
    assert cl.load_experiment(out).variants == ["a", "demo:finance"]
    ok = [
        "run",
        "-i",
        str(EXPENSE),
        "-n",
        "demo:expense",
        "-n",
        "demo:expense",
        "--run",
        "expense-greeting",
        "-o",
        str(tmp_path / "ok.md"),
    ]
    assert main(ok) == 0
    assert "| demo:expense#2 |" in (tmp_path / "ok.md").read_text()
    assert main([*ok[:-2], "-o", str(tmp_path / "x.xml")]) == 2  # not an experiment's format
    assert "cannot write an experiment" in capsys.readouterr().err


def test_the_live_tree_and_the_console_show_a_row_per_variant(base: str, tmp_path: Path) -> None:
    import io

    from convlab.notebook._progress_experiment import ExperimentTree
    from convlab.report._console_experiment import ExperimentConsole

    suite = small_suite(tmp_path)
    tree = ExperimentTree()
    stream = io.StringIO()
    console = ExperimentConsole(stream=stream, quiet=False)
    seen: list[Any] = []

    def both(event: Any) -> None:
        seen.append(type(event).__name__)
        tree(event)
        console(event)

    cl.run(suite, {"good": agent(base, "good"), "bad": agent(base, "bad")}, progress=both)
    assert seen[0] == ExperimentStarted.__name__ and seen[-1] == ExperimentFinished.__name__
    header = tree._header_html()
    assert "<code>good</code></td><td><b>4</b>/4" in header
    assert "<code>bad</code></td><td><b>4</b>/4" in header
    final = tree._repr_mimebundle_()["text/html"]
    assert "Leaderboard" in final and "bad · c1" in final
    text = stream.getvalue()
    assert "good ended (completed): 4/4 passed" in text
    assert "[bad · c1" in text and "Leaderboard" in text


def test_start_stop_and_every_variant_recorded(base: str, tmp_path: Path) -> None:
    """A started experiment (waited for, or stopped) hands each variant's Run on to the
    history under the experiment's name, once."""
    suite = small_suite(tmp_path)
    handle = cl.start(
        suite,
        {"good": agent(base, "good"), "bad": agent(base, "bad")},
        progress=False,
        experiment="started-then-waited",
    )
    exp = handle.wait(60)
    assert isinstance(exp, cl.Experiment)
    assert handle.run is exp and set(handle.results) == {"good", "bad"}
    assert "good: 4" in repr(handle) and "bad: 4" in repr(handle)
    recorded = cl.history(experiment="started-then-waited")
    assert sorted(recorded["variant"]) == ["bad", "good"]
    assert set(recorded["run_id"]) == {exp.runs["good"].id, exp.runs["bad"].id}

    def slow(messages: Any) -> str:
        import time

        time.sleep(0.2)
        return "ok"

    handle = cl.start(
        suite, {"s1": slow, "s2": slow}, runs=20, parallel=2, progress=False, experiment="stopped"
    )
    stopped = handle.stop()
    statuses = Counter(stopped.df["status"])
    assert statuses["cancelled"] > 0 and sum(statuses.values()) == 160
    assert sorted(cl.history(experiment="stopped")["variant"]) == ["s1", "s2"]


def test_openai_grid_builds_named_variants(demos: str) -> None:
    grid = cl.agents.openai_grid(
        {"expense": "demo:expense", "finance": "demo:finance"},
        {"short": "Be brief.", "long": "Explain every step."},
        base_url=demos,
        api_key="k",
        temperature=0,
    )
    assert list(grid) == ["expense/short", "expense/long", "finance/short", "finance/long"]
    assert grid["finance/long"].settings()["system"] == "Explain every step."
    assert grid["finance/long"].settings()["params"] == {"temperature": 0}
    exp = cl.run(EXPENSE, grid, progress=False, experiment="grid")
    board = exp.leaderboard()
    assert len(board) == 4 and board.iloc[0]["agent_variant"].startswith("expense/")
    fig = exp.plot.tradeoff(x="latency")
    assert {t.name for t in fig.data} >= {"on the front"}
    heat = exp.plot.matrix()
    assert heat.data[0].type == "heatmap" and len(heat.data[0].x) == 4
    with pytest.raises(ValueError, match="two variants would be named"):
        cl.agents.openai_grid("m", None, [{"temperature": 0}, {"temperature": 0}])


def test_bad_variants_are_refused_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="no variants"):
        cl.run(EXPENSE, {}, progress=False)
    with pytest.raises(TypeError, match="non-empty string"):
        cl.run(EXPENSE, {"": "demo:expense"}, progress=False)
    with pytest.raises(ValueError, match="experiment="):
        cl.run(EXPENSE, "demo:expense", experiment="x", progress=False)


def test_pareto_front() -> None:
    from convlab.analysis.leaderboard import pareto_front

    front = pareto_front([1.0, 2.0, 3.0, 2.0, math.nan], [50.0, 80.0, 70.0, 60.0, 99.0])
    assert front == [True, True, False, False, False]


def test_escaping_of_names_in_the_views(base: str, tmp_path: Path) -> None:
    name = "<img src=x onerror=alert(1)>"
    exp = cl.run(
        small_suite(tmp_path), {name: agent(base, "good"), "b": agent(base, "bad")}, progress=False
    )
    page = exp._repr_mimebundle_()["text/html"] + exp.matrix().to_html()
    assert name not in page and html.escape(name, quote=True) in page
    fig = exp.plot.tradeoff(x="latency")
    assert all("<img" not in str(t.text) for t in fig.data if t.text is not None)
    assert all("<img" not in a.text for a in fig.layout.annotations)


def test_cost_in_the_leaderboard_and_the_tradeoff(base: str, tmp_path: Path) -> None:
    """A priced model's cost is the run's total; an unknown model's is missing (named), never
    0, and the cost chart leaves it off, saying so."""
    suite = small_suite(tmp_path)
    exp = cl.run(
        suite,
        {"priced": agent(base, "good"), "unknown": agent(base, "bad")},
        runs=2,
        prices={"good": {"input_mtok": 1.0, "output_mtok": 2.0}},
        progress=False,
    )
    rows = {r["agent_variant"]: r for r in exp.leaderboard().to_dict("records")}
    priced = exp["priced"]
    assert rows["priced"]["cost_usd"] == pytest.approx(priced.summary["cost_usd"])
    assert rows["priced"]["cost_usd"] == pytest.approx(priced.df["cost_usd"].sum())
    assert rows["priced"]["cost_usd"] > 0
    assert rows["priced"]["agent_tokens"] == priced.df["agent_tokens"].sum() > 0
    assert math.isnan(rows["unknown"]["cost_usd"])
    board = exp.leaderboard()
    assert board.attrs["unpriced"] == {"unknown": ["bad"]}
    assert "no price for 'bad'" in board.attrs["note"]
    fig = exp.plot.tradeoff(x="cost")
    shown = [t for t in fig.data if t.mode == "markers"]
    assert sum(len(t.x) for t in shown) == 1
    assert [a.text for a in fig.layout.annotations] == ["priced"]
    assert "not shown" in fig.layout.title.text and "unknown" in fig.layout.title.text


def test_arun_awaits_an_experiment() -> None:
    import asyncio

    exp = asyncio.run(cl.arun(EXPENSE, {"a": "demo:expense", "b": "demo:finance"}, progress=False))
    assert isinstance(exp, cl.Experiment) and exp.variants == ["a", "b"]
    assert exp.status == "completed" and len(exp.df) == 24


def test_a_leaderboard_column_declared_once_reaches_every_view(base: str, tmp_path: Path) -> None:
    """A column added to the leaderboard's declaration (convlab.analysis.columns) shows, under
    its title and in its format, in the notebook table, the console and the Markdown report,
    with no other edit."""
    from convlab.analysis.columns import LEADERBOARD, Column
    from convlab.report._console_experiment import ExperimentConsole

    failed_share = Column(
        "failed_share",
        "share not passed",
        "pct",
        brief=True,
        derive=lambda row: 100 * (row["runs"] - row["passed"]) / row["runs"],
    )
    suite = small_suite(tmp_path)
    stream = io.StringIO()
    with LEADERBOARD.added(failed_share):
        exp = cl.run(
            suite,
            {"good": agent(base, "good"), "bad": agent(base, "bad")},
            runs=2,
            progress=ExperimentConsole(stream=stream, quiet=False),
        )
        board = exp.leaderboard()
        assert list(board["failed_share"]) == [0.0, 50.0]
        table = board.table()
        markdown = exp.save(tmp_path / "exp.md").read_text()
    assert "share not passed" in table.df.columns and "share not passed" in table.to_html()
    head = next(line for line in stream.getvalue().splitlines() if "variant  " in line)
    assert head.split()[-3:] == ["share", "not", "passed"]
    assert "| share not passed |" in markdown
    assert "| 50.0% |" in markdown and " 50.0%" in stream.getvalue()
    assert "share not passed" not in exp.save(tmp_path / "after.md").read_text()
