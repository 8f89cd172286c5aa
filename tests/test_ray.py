"""`executor="ray"` on a real local Ray cluster: the same results as the local engine, every
key exactly once when a worker dies, Stop and interrupt that reach the agent calls, replay
with no request, agents that cannot travel refused before anything starts, a failed start
that leaves no lock and no process behind, workers kept warm between runs, and one adaptive
limit per endpoint across the workers.

One cluster serves the whole pytest run (the `ray_cluster` fixture of conftest.py). Ray is a
test dependency (`pip install -e '.[test,ray]'`): without it these tests fail, they never
skip.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from fault_server import Counts, FaultServer, chat_reply
from golden import EXPECTED, project, run_example

import convlab as cl
from convlab.engine.events import CaseFinished, CaseStarted, RunStarted, WorkerLog, WorkersChanged
from convlab.executors._ray import import_ray, worker_actor

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_cluster")]

TWO = cl.executors.ray(workers=2, per_worker=4)
ray = import_ray(local=True)  # as convlab imports it for a local cluster


def _suite(n: int, prefix: str = "c") -> cl.Suite:
    cases = [cl.Case(id=f"{prefix}{i}", input=[cl.Message(content=f"hello {i}")]) for i in range(n)]
    return cl.Suite(id="s", name="s", cases=cases)


def _same(local: cl.Run, remote: cl.Run) -> None:
    a, b = project(local), project(remote)
    assert b["run"]["settings"].pop("executor")["kind"] == "ray"
    assert a == b


# --- the same results ----------------------------------------------------------------------


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_every_example_gives_the_local_engines_results(folder: str) -> None:
    _same(run_example(folder, 2), run_example(folder, 2, executor=TWO))


def test_executor_ray_as_one_argument_joins_the_running_cluster_and_leaves_it_running() -> None:
    run = cl.run("examples/expense", "demo:expense", executor="ray", progress=False)
    assert run.summary["passed"] == 10 and run.settings["executor"]["workers"] == 2
    assert ray.is_initialized()


# --- exactly once --------------------------------------------------------------------------


async def _slow(messages: list[dict[str, Any]]) -> str:
    await asyncio.sleep(0.02)
    return "ok " + messages[-1]["content"]


def test_a_killed_worker_loses_nothing_and_repeats_no_finished_instance(tmp_path: Path) -> None:
    store = tmp_path / "run.jsonl"
    seen: list[Any] = []

    def listener(event: Any) -> None:
        seen.append(event)
        finished = sum(isinstance(e, CaseFinished) for e in seen)
        if isinstance(event, CaseFinished) and finished == 40:
            run_id = next(e.run_id for e in seen if isinstance(e, RunStarted))
            ray.kill(worker_actor(run_id, "w1"))

    ex = cl.executors.ray(workers=2, per_worker=10)
    run = cl.run(_suite(300), _slow, executor=ex, store=store, progress=listener)
    keys = [(r.case_id, r.run) for r in run.results]
    assert len(keys) == 300 and len(set(keys)) == 300
    assert {r.status for r in run.results} == {"passed"}
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    stored = Counter(d["case_id"] for d in lines if d.get("type") == "result")
    assert len(stored) == 300 and set(stored.values()) == {1}
    finished = Counter(e.result.case_id for e in seen if isinstance(e, CaseFinished))
    assert len(finished) == 300 and set(finished.values()) == {1}
    counts = [e.workers for e in seen if isinstance(e, WorkersChanged)]
    assert counts[0] == 2 and 1 in counts  # w1 went, and a replacement came
    started_on = {e.worker for e in seen if isinstance(e, CaseStarted)}
    assert {"w1", "w2"} <= started_on


def test_resume_under_ray_runs_only_what_the_store_lacks(tmp_path: Path) -> None:
    store = tmp_path / "run.jsonl"
    calls: list[str] = []
    first = cl.run(_suite(6), "demo:expense", store=store, progress=False)
    lines = store.read_text().splitlines()
    store.write_text("\n".join(lines[:4]) + "\n")  # the header and three results

    def listener(event: Any) -> None:
        if isinstance(event, CaseStarted):
            calls.append(event.key[0])

    again = cl.run(
        _suite(6), "demo:expense", store=store, resume=True, executor=TWO, progress=listener
    )
    assert sorted(calls) == ["c3", "c4", "c5"]
    assert [r.case_id for r in again.results] == [r.case_id for r in first.results]


# --- stop and interrupt --------------------------------------------------------------------


def _counting(delay: float) -> Any:
    async def handle(request: web.Request, counts: Counts) -> web.StreamResponse:
        body = await request.json()
        counts.accepted += 1
        counts.in_flight += 1
        try:
            await asyncio.sleep(delay)
        finally:
            counts.in_flight -= 1
        return chat_reply("echo: " + body["messages"][-1]["content"])

    return handle


def _wait_for(check: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_stop_cancels_the_agent_calls_in_flight_and_returns_the_partial_run() -> None:
    with FaultServer(_counting(0.3)) as server:
        agent = cl.agents.openai("m", base_url=server.base + "/v1", api_key="x")
        handle = cl.start(_suite(60), agent, parallel=8, executor=TWO, progress=False)
        _wait_for(lambda: len(handle.results) >= 10)
        run = handle.stop()
        sent = server.counts.accepted
        time.sleep(0.6)
        assert server.counts.accepted == sent, "requests went on after stop() returned"
        assert server.counts.in_flight == 0
    assert run.status == "cancelled" and len(run.results) == 60
    statuses = Counter(r.status for r in run.results)
    assert statuses["passed"] >= 10 and statuses["cancelled"] > 0
    assert statuses["passed"] + statuses["cancelled"] == 60


def test_an_interrupted_arun_returns_the_partial_run() -> None:
    seen: list[Any] = []

    async def go() -> cl.Run:
        task = asyncio.ensure_future(
            cl.arun(_suite(200), _slow, executor=TWO, progress=seen.append)
        )
        while sum(isinstance(e, CaseFinished) for e in seen) < 20:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        task.cancel()  # what interrupting the cell does
        return await task

    run = asyncio.run(go())
    assert run.status == "cancelled" and len(run.results) == 200
    statuses = Counter(r.status for r in run.results)
    assert statuses["passed"] >= 20 and statuses["cancelled"] > 0


# --- record and replay ---------------------------------------------------------------------


def test_a_replayed_run_under_ray_makes_no_request(tmp_path: Path) -> None:
    cache = tmp_path / "recordings"
    with FaultServer(_counting(0.0)) as server:
        agent = cl.agents.openai("m", base_url=server.base + "/v1", api_key="x")
        live = cl.run(
            _suite(12), agent, executor=TWO, cache="record", cache_dir=cache, progress=False
        )
        assert server.counts.accepted == 12 and live.settings["cache"]["recorded"] == 12
        replayed = cl.run(
            _suite(12), agent, executor=TWO, cache="replay", cache_dir=cache, progress=False
        )
        assert server.counts.accepted == 12, "a replayed run called the server"
    assert replayed.settings["cache"]["replayed"] == 12
    assert [r.turns[0].observation.text for r in replayed.results] == [
        f"echo: hello {i}" for i in range(12)
    ]
    assert len(list(cache.rglob("*.json"))) == 12


# --- what travels --------------------------------------------------------------------------


def test_an_agent_closing_over_a_client_is_refused_before_anything_starts() -> None:
    client = httpx.AsyncClient()
    started: list[Any] = []

    async def agent(messages: list[dict[str, Any]]) -> str:
        return (await client.get("http://127.0.0.1:9/")).text

    with pytest.raises(cl.executors.ExecutorError) as err:
        cl.run(_suite(3), agent, executor=TWO, progress=started.append)
    message = str(err.value)
    assert "client" in message and "httpx.AsyncClient" in message and "factory" in message
    assert started == []


def test_a_worker_with_another_convlab_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import convlab.executors._ray as ray_executor

    monkeypatch.setattr(ray_executor, "driver_version", lambda: "9.9.9")
    run = cl.run(_suite(3), "demo:expense", executor=TWO, progress=False)
    assert run.status == "failed" and run.error is not None
    assert re.search(r"runs convlab 0\.1\.0.*9\.9\.9", run.error), run.error
    assert {(r.status, r.blame) for r in run.results} == {("error", "infrastructure")}


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'convlab\[ray\]'"):
        cl.run(_suite(1), "demo:expense", executor="ray", progress=False)


def test_worker_logs_and_prints_come_back_as_events(capfd: pytest.CaptureFixture[str]) -> None:
    def chatty(messages: list[dict[str, Any]]) -> str:
        print("printed on a worker")
        logging.getLogger("agent").warning("logged on a worker")
        return "hi"

    seen: list[Any] = []
    cl.run(_suite(2), chatty, executor=TWO, progress=seen.append)
    logs = [e for e in seen if isinstance(e, WorkerLog)]
    texts = {(e.level, e.message) for e in logs}
    assert ("PRINT", "printed on a worker") in texts
    assert ("WARNING", "agent: logged on a worker") in texts
    assert {e.worker for e in logs} <= {"w1", "w2"}
    out, err = capfd.readouterr()
    assert "on a worker" not in out + err


def test_the_live_tree_shows_the_workers() -> None:
    from convlab.notebook.progress import LiveTree

    tree = LiveTree()
    cl.run(_suite(8), _slow, executor=TWO, progress=tree)
    html = tree.snapshot_html()
    assert "on 2 workers (local Ray cluster, reused, 4 in flight each)" in html and "on w1" in html


def test_the_cli_runs_on_ray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from convlab.cli import main

    out = tmp_path / "out.json"
    code = main(
        ["run", "-i", "examples/expense", "-n", "demo:expense", "--executor", "ray", "-o", str(out)]
    )
    assert code == 1  # two cases fail on purpose
    saved = json.loads(out.read_text())
    assert saved["settings"]["executor"]["kind"] == "ray"
    assert (
        "Running on 2 workers (local Ray cluster, reused, 2 in flight each)"
        in capsys.readouterr().err
    )


def test_ci_runs_the_readmes_test_command_with_ray_installed() -> None:
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    command = "pip install -e '.[test,ray]' && python -m pytest"
    assert f"```bash\n{command}\n```" in readme
    assert f"\n{command} || exit $?\n" in (root / ".ci" / "run").read_text(encoding="utf-8")


def test_an_experiment_on_ray_equals_the_local_one() -> None:
    """Every variant's instances on the one cluster, the driver writing: the same statuses,
    texts, checks and leaderboard figures (timings apart) as the local engine's."""
    variants = {"a": "demo:expense", "b": "demo:finance"}
    seen: list[Any] = []
    local = cl.run("examples/expense", variants, runs=2, progress=False)
    remote = cl.run("examples/expense", variants, runs=2, executor="ray", progress=seen.append)
    assert remote.variants == local.variants == ["a", "b"]
    for name in variants:
        _same(local[name], remote[name])
        assert remote[name].settings["executor"]["workers"] == 1  # the two share the 2 CPUs
    timings = ["latency_p50_ms", "latency_p95_ms"]
    assert (
        local.leaderboard().drop(columns=timings).equals(remote.leaderboard().drop(columns=timings))
    )
    started = [e.variant for e in seen if isinstance(getattr(e, "event", None), CaseStarted)]
    assert Counter(started) == {"a": 24, "b": 24}
    assert ray.is_initialized()  # a joined cluster is left running


def test_a_key_read_from_the_environment_is_not_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    from ray import cloudpickle

    monkeypatch.setenv("OPENAI_API_KEY", "sk-on-the-driver-0123456789")
    sent = cloudpickle.dumps(cl.agents.openai("m", base_url="http://127.0.0.1:9/v1"))
    assert b"sk-on-the-driver" not in sent
    monkeypatch.setenv("OPENAI_API_KEY", "sk-on-the-worker-0123456789")
    there = pickle.loads(sent)
    assert there._key.reveal() == "sk-on-the-worker-0123456789"
    given = cl.agents.openai("m", base_url="http://127.0.0.1:9/v1", api_key="sk-given-0123456789")
    assert pickle.loads(cloudpickle.dumps(given))._key.reveal() == "sk-given-0123456789"


def test_an_instance_out_of_attempts_is_an_infrastructure_error() -> None:
    seen: list[Any] = []

    def listener(event: Any) -> None:
        seen.append(event)
        if isinstance(event, CaseFinished) and sum(isinstance(e, CaseFinished) for e in seen) == 5:
            run_id = next(e.run_id for e in seen if isinstance(e, RunStarted))
            ray.kill(worker_actor(run_id, "w1"))

    ex = cl.executors.ray(workers=2, per_worker=10, attempts=1)
    run = cl.run(_suite(120), _slow, executor=ex, progress=listener)
    assert len({r.case_id for r in run.results}) == 120
    lost = [r for r in run.results if r.status == "error"]
    assert lost and all(r.blame == "infrastructure" for r in lost)
    assert "worker w1" in lost[0].error and "ActorDiedError" in lost[0].error
    assert {r.status for r in run.results} == {"passed", "error"}


def test_convlab_yaml_sends_a_suite_to_ray(tmp_path: Path) -> None:
    import shutil

    from convlab.cli import main

    root = Path(__file__).resolve().parent.parent
    suite = tmp_path / "expense"
    shutil.copytree(root / "examples" / "expense", suite)
    (suite / "convlab.yaml").write_text("agent: demo:expense\nexecutor: ray\n")
    out = tmp_path / "out.json"
    assert main(["run", "-i", str(suite), "-o", str(out)]) == 1
    assert json.loads(out.read_text())["settings"]["executor"]["kind"] == "ray"


def test_fail_fast_starts_nothing_new_after_the_first_failure() -> None:
    async def breaks_once(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(0.02)
        if messages[-1]["content"] == "hello 5":
            raise RuntimeError("boom")
        return "ok"

    run = cl.run(_suite(300), breaks_once, executor=TWO, fail_fast=True, progress=False)
    statuses = Counter(r.status for r in run.results)
    assert len({r.case_id for r in run.results}) == len(run.results) == 300
    assert statuses["error"] == 1 and statuses["cancelled"] > 100
    assert {r.error for r in run.results if r.status == "cancelled"} == {
        "run stopped before it ran"
    }


# --- a start that fails ---------------------------------------------------------------------

_FAILED_START = """
import json, sys, time
import convlab as cl
from convlab.executors._cluster import _descendants

suite, store = sys.argv[1], sys.argv[2]
out = {}
t0 = time.monotonic()
typo = cl.executors.ray(address="127.0.0.1:9")
run = cl.run(suite, "demo:expense", executor=typo, store=store, progress=False)
out["unreachable"] = [run.status, run.error, time.monotonic() - t0]
out["again"] = cl.run(suite, "demo:expense", store=store, resume=True, progress=False).status
# Ray's raylet refuses an option it does not know: its start times out, as on a busy machine
broken = cl.executors.ray(start_timeout=1, init={"_system_config": {"no_such_option": 1}})
run = cl.run(suite, "demo:expense", executor=broken, store=store, overwrite=True, progress=False)
statuses = sorted({(r.status, r.blame) for r in run.results})
out["failed"] = [run.status, run.error, statuses]
out["left"] = [p for p in _descendants()]
out["after"] = cl.run(suite, "demo:expense", store=store, overwrite=True, progress=False).status
print(json.dumps(out))
"""


def test_a_failed_start_says_what_to_do_and_leaves_no_lock_nor_process(tmp_path: Path) -> None:
    """Its own process: this one is connected to the tests' cluster already."""
    store = tmp_path / "run.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # Ray's defaults
    done = subprocess.run(
        [sys.executable, "-c", _FAILED_START, "examples/expense", str(store)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    status, error, took = out["unreachable"]
    assert status == "failed" and "'127.0.0.1:9'" in error and "\n" not in error
    assert took < 60, "an address where nothing answers failed only after minutes"
    assert out["again"] == "completed", "the failed run kept its store locked"
    status, error, statuses = out["failed"]
    assert status == "failed" and error.startswith("Ray did not start within ")
    assert "the machine may be busy" in error and "start_timeout=" in error
    assert "leave executor out" in error and "\n" not in error
    assert statuses == [["error", "infrastructure"]]
    assert out["left"] == [], "the failed start left Ray's processes running"
    assert out["after"] == "completed"


# --- what a local cluster exposes ------------------------------------------------------------


def test_the_token_file_is_private_and_the_cluster_is_on_loopback() -> None:
    token = Path.home() / ".ray" / "auth_token"
    assert token.stat().st_mode & 0o077 == 0, oct(token.stat().st_mode)
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}


# --- warm between runs ---------------------------------------------------------------------


def test_the_second_run_reuses_the_cluster_and_the_warm_workers() -> None:
    from convlab.executors._warm import POOL

    seen: list[Any] = []
    cl.run(_suite(6), _slow, executor=TWO, progress=False)
    warm = list(POOL.actors)
    pids = {ray.get(a.pid.remote()) for a in warm}
    cl.run(_suite(6), _slow, executor=TWO, progress=seen.append)
    said = [e.where for e in seen if isinstance(e, WorkersChanged)]
    assert said == ["local Ray cluster, reused, 4 in flight each"]
    assert {ray.get(a.pid.remote()) for a in POOL.actors[:2]} == pids
    assert not any(e.since for e in seen if isinstance(e, WorkersChanged))


def test_idle_workers_are_ended_and_the_next_run_starts_them_again() -> None:
    from convlab.executors._warm import POOL

    cl.run(_suite(4), _slow, executor=TWO, progress=False)
    assert POOL.actors
    idle = cl.executors.ray(workers=2, per_worker=4, idle_timeout=0.2)
    cl.run(_suite(4), _slow, executor=idle, progress=False)
    _wait_for(lambda: not POOL.actors, timeout=30)  # ended once idle
    cl.run(_suite(4), _slow, executor=TWO, progress=False)
    assert len(POOL.actors) == 2


# --- one adaptive limit per endpoint -------------------------------------------------------


def test_a_rate_limited_endpoint_sees_one_limit_and_no_instance_runs_out_of_retries() -> None:
    from fault_server import limited

    with FaultServer(limited(4, delay=0.02, retry_after="0"), path="/chat") as server:
        agent = cl.agents.http(server.url)
        run = cl.run(_suite(200), agent, parallel=40, executor=TWO, retries=4, progress=False)
    assert {r.status for r in run.results} == {"passed"}, Counter(r.error for r in run.results)
    transport = run.settings["transport"]
    assert transport["overloads"] == server.counts.rejected > 0  # every 429 cut the one limit
