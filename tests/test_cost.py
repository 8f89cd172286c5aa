"""What runs cost: every model call's usage, by role (agent, user simulator, judge), priced
with genai-prices' bundled database (never fetched) or the run's `prices`; models served by
a real OpenAI-compatible server on 127.0.0.1 (`convlab serve-demo`'s server)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dynamic_expense import expense_agent, expense_case
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

import convlab as cl
from convlab.agents.serve import DemoServer
from convlab.analysis.frames import unpriced_models
from convlab.model import Case, Message, Suite
from convlab.model.conversation import Reply, Usage
from convlab.notebook._cards import run_card

ROOT = Path(__file__).resolve().parent.parent


def user_llm(messages: list[dict[str, Any]]) -> str:
    said = "Travel, $3500" if "Assistant:" in messages[-1]["content"] else "File an expense"
    return json.dumps({"message": said, "goal_achieved": False, "reasoning": "next"})


def judge_llm(messages: list[dict[str, Any]]) -> str:
    return json.dumps({"answer": "yes", "reason": "it says filed"})


def suite() -> Suite:
    judged = Case(
        id="judged",
        input=[Message(content="a travel expense please")],
        assertions=[{"kind": "judge", "question": "Was the expense filed?"}],
    )
    return Suite(id="s", cases=[expense_case("trip"), judged])


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    # the served names are the models the endpoint reports: two that genai-prices knows
    apps = {"gpt-4o-mini": expense_agent, "gpt-4o": user_llm, "house-judge": judge_llm}
    with DemoServer(apps) as url:
        yield url


def model(name: str, base: str) -> Any:
    return cl.agents.openai(name, base_url=base, api_key="sk-test")


def priced(name: str, prompt: int, completion: int) -> float:
    """genai-prices' own figure for one call."""
    used = PriceUsage(input_tokens=prompt, output_tokens=completion)
    return float(calc_price(used, name).total_price)


def run_it(base: str, **options: Any) -> cl.Run:
    return cl.run(
        suite(),
        model("gpt-4o-mini", base),
        simulator=model("gpt-4o", base),
        judge=model("house-judge", base),
        progress=False,
        **options,
    )


def test_each_role_is_priced_apart_and_an_unknown_model_is_missing(base: str) -> None:
    run = run_it(base)
    assert [r.status for r in run.results] == ["passed", "passed"]
    trip, judged = run.results
    assert [(s.role, s.model) for s in trip.spend] == [
        ("agent", "gpt-4o-mini"),
        ("simulator", "gpt-4o"),
    ]
    agent = trip.spend[0]
    assert agent.calls == len(trip.turns) and agent.endpoint == base
    # the server counts words; each turn is one call, priced as genai-prices prices it
    expected = sum(
        priced(
            "gpt-4o-mini", t.observation.usage.prompt_tokens, t.observation.usage.completion_tokens
        )
        for t in trip.turns
    )
    assert agent.cost_usd == pytest.approx(expected, rel=1e-9)
    assert trip.spend[1].cost_usd and trip.spend[1].cost_usd > 0
    df = run.df.set_index("case_id")
    assert df.loc["trip", "cost_usd"] == pytest.approx(agent.cost_usd + trip.spend[1].cost_usd)
    assert df.loc["trip", "simulator_tokens"] == trip.spend[1].total_tokens > 0
    # the judge's model is not in the database: its case's cost is missing, never 0
    assert [(s.role, s.model, s.cost_usd) for s in judged.spend][1:] == [
        ("judge", "house-judge", None)
    ]
    assert math.isnan(df.loc["judged", "cost_usd"])
    assert df.loc["judged", "judge_tokens"] > 0
    assert run.summary["cost_usd"] is None
    assert unpriced_models(run) == ["house-judge"]


def test_a_price_override_prices_what_the_database_does_not_know(base: str) -> None:
    run = run_it(base, prices={"house-judge": {"input_mtok": 2.0, "output_mtok": 8.0}})
    judge = next(s for s in run.results[1].spend if s.role == "judge")
    assert judge.cost_usd == pytest.approx(
        (judge.prompt_tokens * 2.0 + judge.completion_tokens * 8.0) / 1e6
    )
    assert run.summary["cost_usd"] == pytest.approx(run.df["cost_usd"].sum())
    assert unpriced_models(run) == []


def test_a_bad_price_is_refused_before_anything_runs(base: str) -> None:
    with pytest.raises(cl.ConvlabError, match=r"prices\['m'\]\.output_mtk: Extra inputs"):
        run_it(base, prices={"m": {"input_mtok": 1, "output_mtk": 2}})
    with pytest.raises(cl.ConvlabError, match=r"prices\['m'\]\.input_mtok: Input should be"):
        run_it(base, prices={"m": {"input_mtok": -1}})
    # a list where a mapping belongs: the same clear error convlab.yaml gives, not AttributeError
    with pytest.raises(cl.ConvlabError, match=r"prices: expected a mapping .* got a list"):
        run_it(base, prices=[{"m": {"input_mtok": 1}}])


def test_a_replayed_run_shows_the_recorded_usage_and_cost(base: str, tmp_path: Path) -> None:
    first = run_it(base, cache="record", cache_dir=tmp_path)
    again = run_it(base, cache="replay", cache_dir=tmp_path)
    assert again.settings["cache"]["missed"] == 0 and again.settings["cache"]["replayed"] > 0
    assert [r.status for r in again.results] == ["passed", "passed"]
    assert [r.spend for r in again.results] == [r.spend for r in first.results]


def test_functions_cost_nothing_unless_they_report_usage() -> None:
    plain = cl.run(
        suite().model_copy(update={"cases": suite().cases[1:]}),
        lambda m: "filed",
        judge=lambda m: judge_llm(m),
        progress=False,
    )
    assert plain.results[0].spend == [] and plain.df["cost_usd"].tolist() == [0.0]
    assert plain.summary["cost_usd"] == 0.0

    def reporting(messages: list[dict[str, Any]]) -> Reply:
        return Reply(
            text="filed",
            usage=Usage(
                prompt_tokens=1000, completion_tokens=10, total_tokens=1010, model="gpt-4o"
            ),
        )

    run = cl.run(
        Suite(id="s", cases=[Case(id="a", input=[Message(content="hi")])]),
        reporting,
        progress=False,
    )
    [spent] = run.results[0].spend
    assert spent.cost_usd == pytest.approx(priced("gpt-4o", 1000, 10))


def test_the_card_and_the_cli_show_the_total_or_say_which_model_has_no_price(
    base: str, tmp_path: Path
) -> None:
    text, html = run_card(run_it(base))
    note = "cost unknown: no price for 'house-judge'"
    assert note in text and note.replace("'", "&#x27;") in html
    text, _ = run_card(run_it(base, prices={"house-judge": {"input_mtok": 1}}))
    assert "cost $" in text and "tokens: agent" in text and "judge" in text

    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "expense" / "expense.jsonl", folder)
    (folder / "convlab.yaml").write_text("prices:\n  expense: {input_mtok: 1.5, output_mtok: 6}\n")
    with DemoServer() as url:
        done = subprocess.run(
            [sys.executable, "-m", "convlab.cli", "run", "-i", str(folder), "-n",
             "openai:expense", "-o", str(tmp_path / "out.json")],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test",
                 "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    shown = (done.stdout + done.stderr).splitlines()
    [cost] = [line for line in shown if line.strip().startswith("Cost:")]
    saved = json.loads((tmp_path / "out.json").read_text())
    total = sum(s["cost_usd"] for r in saved["results"] for s in r.get("spend", []))
    assert total > 0 and f"${total:.3g}" in cost


def test_the_reports_show_the_cost(base: str, tmp_path: Path) -> None:
    run = run_it(base, prices={"house-judge": {"input_mtok": 1}})
    total = run.summary["cost_usd"]
    md = run.save(tmp_path / "r.md").read_text()
    page = run.save(tmp_path / "r.html").read_text()
    assert f"Cost \\${total:.3g}" in md and f"cost ${total:.3g}" in page


def _reporting(prompt: int, completion: int, model: str) -> Any:
    def agent(messages: list[dict[str, Any]]) -> Reply:
        usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            model=model,
        )
        return Reply(text="filed", usage=usage)

    return agent


@pytest.mark.parametrize(
    ("prompt", "model", "prices"),
    [
        (-1000, "gpt-4o", None),  # genai-prices knows the model: it refused the count
        (-1_000_000, "house-model", {"house-model": {"input_mtok": 1.0}}),  # was -$1.00
        (10**30, "gpt-4o", None),  # was priced silently at $2.5e24
    ],
)
def test_impossible_token_usage_is_flagged_never_an_agent_error_or_priced(
    prompt: int, model: str, prices: dict[str, Any] | None
) -> None:
    one = Suite(id="s", cases=[Case(id="a", input=[Message(content="hi")])])
    run = cl.run(one, _reporting(prompt, 10, model), prices=prices, progress=False)
    [result] = run.results
    assert result.status == "passed", result.error
    assert result.spend == []  # not counted, so never a negative or absurd cost
    assert run.summary["cost_usd"] == 0.0
    [turn] = result.turns
    assert turn.observation is not None and turn.observation.error is not None
    assert f"prompt_tokens={prompt}" in turn.observation.error
    assert "impossible token usage" in turn.observation.error


def test_a_model_priced_once_costs_what_genai_prices_says_for_every_call() -> None:
    # Pricer looks a model's price up once and prices each call from it: every model of the
    # bundled database (tiered ones too), at sizes across the tiers, gives genai-prices' own
    # figure for the call to the last digit, and the run's own prices their exact product
    from datetime import UTC, datetime
    from decimal import Decimal

    from genai_prices.data_snapshot import get_snapshot

    from convlab.agents.pricing import Price, Pricer, Rate

    now = datetime.now(UTC)
    sizes = [(0, 0), (1, 0), (0, 1), (12, 5), (199_999, 333), (200_001, 4_321), (3_000_007, 17)]
    checked = tiered = 0
    for provider in get_snapshot().providers:
        for known in provider.models:
            price = known.get_prices(now)
            rate = Rate.of(price)
            tiered += any(type(v).__name__ == "TieredPrices" for v in vars(price).values())
            for prompt, completion in sizes:
                used = PriceUsage(input_tokens=prompt, output_tokens=completion)
                expected = float(price.calc_price(used)["total_price"])
                assert rate.cost(prompt, completion) == expected, (known.id, prompt, completion)
                checked += 1
    assert checked > 5_000 and tiered > 10  # the database is there, tiers included

    pricer = Pricer({"house": Price(input_mtok=0.3, output_mtok=1.7)})
    exact = (Decimal(1234) * Decimal("0.3") + Decimal(56) * Decimal("1.7")) / 1_000_000
    assert pricer.cost("house", None, 1234, 56) == float(exact)
    assert pricer.cost("gpt-4o", None, 1000, 10) == priced("gpt-4o", 1000, 10)
    assert pricer.cost("no-such-model", None, 1, 1) is None
    assert pricer.cost(None, None, 1, 1) is None


def test_a_models_price_is_looked_up_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # the first lookup loads genai-prices' database: on the event loop it would hold up
    # every call in flight, so it runs in a thread, once per model and run
    import threading

    from convlab.agents import pricing

    looked_up: list[tuple[str, bool]] = []
    real = pricing._known_price

    def known_price(model: str, endpoint: str | None) -> Any:
        looked_up.append((model, threading.current_thread() is threading.main_thread()))
        return real(model, endpoint)

    monkeypatch.setattr(pricing, "_known_price", known_price)

    def reporting(messages: list[dict[str, Any]]) -> Reply:
        used = Usage(prompt_tokens=100, completion_tokens=10, total_tokens=110, model="gpt-4o")
        return Reply(text="filed", usage=used)

    cases = [Case(id=f"c{i}", input=[Message(content="hi")]) for i in range(5)]
    run = cl.run(Suite(id="s", cases=cases), reporting, progress=False)
    assert looked_up and all(model == "gpt-4o" and not main for model, main in looked_up)
    assert len(looked_up) < 5  # once per model, but for calls that came in meanwhile
    assert {s.cost_usd for r in run.results for s in r.spend} == {priced("gpt-4o", 100, 10)}
