"""A run closes only what it created, two runs on one
loop share an agent's pool safely, `max_reply_bytes` is recorded and has a CLI flag, and a
long reply is stored once wherever a check copies it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.agents import Agent, AgentSession
from convlab.agents.serve import DemoServer
from convlab.cli import main
from convlab.model import Case, Message, Observation, Suite

GUARD_S = 60.0


class Mine(Agent):
    """A user's own agent: its `aclose` ends it for good, as a user's client might."""

    name = "mine"

    def __init__(self) -> None:
        self.closed = 0

    async def open(self, ctx: Any) -> Any:
        if self.closed:
            raise RuntimeError("used after aclose: the run closed an agent it did not create")
        return _Session()

    async def aclose(self) -> None:
        self.closed += 1


class _Session(AgentSession):
    async def send(self, messages: list[Message], ctx: Any) -> Observation:
        return Observation(text="ok " + str(messages[-1].content))


def std(case_id: str, text: str = "hi", **kw: Any) -> Case:
    return Case(
        id=case_id,
        input=[Message(content=text)],
        assertions=[{"kind": "contains", "value": "ok"}],
        **kw,
    )


def suite(n: int = 2) -> Suite:
    return Suite(id="s", cases=[std(f"c{i}", f"hi {i}") for i in range(n)])


def test_a_run_never_closes_the_users_own_agent_judge_or_simulator() -> None:
    agent, judge, sim = Mine(), Mine(), Mine()
    for _ in range(2):  # still usable: the second run works as the first did
        run = cl.run(suite(), agent, judge=judge, simulator=sim, progress=False)
        assert [r.status for r in run.results] == ["passed", "passed"]
    handle = cl.start(suite(), agent, progress=False)
    assert handle.wait(GUARD_S).summary["passed"] == 2
    assert asyncio.run(cl.arun(suite(), agent, progress=False)).summary["passed"] == 2
    assert cl.ask(agent, "hello", {"type": "contains", "value": "ok"}).passed
    assert cl.ask(agent, "again", {"type": "contains", "value": "ok"}).passed
    assert (agent.closed, judge.closed, sim.closed) == (0, 0, 0)


def test_convlabs_own_agents_passed_in_are_still_released() -> None:
    closed: list[str] = []
    fn = cl.agents.function(lambda m: "ok")

    async def mark() -> None:
        closed.append("function")

    fn.aclose = mark  # type: ignore[method-assign]
    cl.run(suite(1), fn, progress=False)  # convlab's own agents release their loop's pools
    assert closed == ["function"]


@pytest.fixture(scope="module")
def slow_url():
    with DemoServer({"echo": lambda messages: "ok " + messages[-1]["content"]}, 40) as url:
        yield url


def test_two_runs_gathered_on_one_loop_share_an_agent_safely(slow_url: str) -> None:
    agent = cl.agents.openai("echo", base_url=slow_url, api_key="k")

    async def both() -> list[cl.Run]:
        short = cl.arun(suite(2), agent, parallel=2, retries=0, progress=False)
        long = cl.arun(suite(24), agent, parallel=8, retries=0, progress=False)
        return list(await asyncio.gather(short, long))

    short, long = asyncio.run(both())
    bad = [f"{r.case_id}: {r.error}" for r in [*short.results, *long.results] if r.error]
    assert not bad, bad
    assert (short.summary["passed"], long.summary["passed"]) == (2, 24)


BIG = "START" + "y" * 20_000 + "END"


def test_max_reply_bytes_is_recorded_and_on_the_cli(tmp_path: Path) -> None:
    run = cl.run(suite(1), lambda m: BIG, progress=False, max_reply_bytes=1000)
    assert run.settings["max_reply_bytes"] == 1000
    assert run.results[0].turns[0].observation.truncated_from == len(BIG)
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "input": "hi"}\n')
    (tmp_path / "agent.py").write_text(f"def big(messages):\n    return {BIG!r}\n")
    out = tmp_path / "out.json"
    args = ["run", "-i", str(cases), "-n", "agent:big", "-o", str(out), "--max-reply-bytes"]
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        assert main([*args, "500"]) == 0
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("agent", None)
    saved = cl.load_run(out)
    assert saved.settings["max_reply_bytes"] == 500
    assert saved.results[0].turns[0].observation.truncated_from == len(BIG)
    assert main([*args, "-3"]) == 2  # a usage error, not a run


def test_a_long_reply_is_not_copied_into_case_level_checks_and_checkpoints(tmp_path: Path) -> None:
    checks = [{"kind": "contains", "value": "nope"}, {"kind": "equals", "value": "nope"}]
    cases = [
        Case(
            id="turns",
            mode="turns",
            turns=[{"input": {"text": "hi"}, "assertions": checks}],
            assertions=checks,  # case level: they see the last reply
        ),
        Case(
            id="dyn",
            mode="dynamic",
            input=[Message(content="hi")],
            simulator={"goal": "g"},
            checkpoints=[{"id": "cp", "assertion": {"kind": "equals", "value": "nope"}}],
            limits={"max_turns": 2},
        ),
    ]
    store = tmp_path / "store.jsonl"
    cap = 10_000
    run = cl.run(
        Suite(id="s", cases=cases), lambda m: BIG, progress=False, store=store, max_reply_bytes=cap
    )
    cut = BIG.encode()[:cap].decode()
    for result in run.results:
        line = result.to_json()
        kept = json.loads(line)
        # each reply twice (its text and the message holding it), never in its checks
        assert line.count(cut[:5000]) == 2 * len(result.turns), result.case_id
        assert all(len(t["observation"]["messages"][0]["content"]) <= cap for t in kept["turns"])
    text = store.read_text()
    assert text.count(cut[:5000]) == 2 * sum(len(r.turns) for r in run.results)
    [turns, _] = run.results
    assert all("see the turn's observation text" in a.actual for a in turns.assertions)
