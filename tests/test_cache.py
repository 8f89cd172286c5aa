"""Record and replay (`run(..., cache=...)`): every example suite recorded against the demo
agents served over HTTP on 127.0.0.1, then replayed with the server stopped to the same
statuses, texts and tool calls; a deleted recording fails its case by name and turn; runs=N
keeps N samples; auto; secrets; @cl.cached functions; simulators and judges; the CLI."""

from __future__ import annotations

import asyncio
import itertools
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from dynamic_expense import expense_agent, expense_case

import convlab as cl
from convlab.agents.serve import DemoServer
from convlab.model import Case, Message, Suite

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())


def seen(run: cl.Run) -> list[Any]:
    """What a user compares: each instance's status, error, and per turn the reply text, the
    tool calls (name, arguments, result) and the checks' statuses."""
    return [
        (
            r.key,
            r.status,
            r.error,
            [
                (
                    t.status,
                    t.observation.text if t.observation else None,
                    [(c.name, c.arguments, c.result) for c in t.observation.tool_calls]
                    if t.observation
                    else None,
                    [a.status for a in t.assertions],
                )
                for t in r.turns
            ],
            [a.status for a in r.assertions],
        )
        for r in run.results
    ]


def recordings(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def served(name: str, base: str, **kw: Any) -> Any:
    return cl.agents.openai(name, base_url=base, api_key=kw.pop("api_key", "sk-test-key"), **kw)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every example suite run against its demo agent over HTTP with cache='record', the
    server then stopped (its URL kept, so a live call would fail to connect)."""
    folder = tmp_path_factory.mktemp("cassette")
    runs: dict[str, cl.Run] = {}
    with DemoServer() as base:
        for name, spec in EXPECTED.items():
            suite = cl.load(EXAMPLES / spec["path"])
            agent = served(spec["agent"].removeprefix("demo:"), base)
            runs[name] = cl.run(suite, agent, cache="record", cache_dir=folder, progress=False)
    return {"dir": folder, "base": base, "runs": runs}


def replay(recorded: dict[str, Any], name: str, **kw: Any) -> cl.Run:
    spec = EXPECTED[name]
    agent = served(spec["agent"].removeprefix("demo:"), recorded["base"], api_key="")
    suite = cl.load(EXAMPLES / spec["path"])
    return cl.run(suite, agent, cache="replay", cache_dir=recorded["dir"], **kw, progress=False)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_replay_of_every_example_suite_is_the_run_it_recorded(recorded, name):
    """Replayed with the server gone and no API key: identical, and every call replayed."""
    before = recorded["runs"][name]
    # real replies came over the wire (catalog's choices do not cross it: see serve.py)
    assert any(t.observation and t.observation.text for r in before.results for t in r.turns)
    assert before.settings["cache"]["recorded"] > 0
    again = replay(recorded, name)
    assert seen(again) == seen(before)
    counts = again.settings["cache"]
    assert counts["mode"] == "replay" and counts["recorded"] == counts["missed"] == 0
    made = before.settings["cache"]
    assert counts["replayed"] == made["recorded"] + made["replayed"]


def test_recordings_are_small_reviewable_json_named_by_their_hash(recorded):
    files = recordings(recorded["dir"])
    assert files
    for path in files:
        doc = json.loads(path.read_text())
        assert path.stem == doc["key"] and path.parent.name == doc["key"][:2]
        assert doc["request"]["url"].endswith("/v1/chat/completions")
        assert doc["request"]["body"]["messages"]  # the messages sent, as JSON
        assert doc["response"]["status"] == 200 and "choices" in doc["response"]["json"]
        assert "\n" in path.read_text()  # indented: a diff shows the line that changed
        text = path.read_text()
        assert "sk-test-key" not in text and "authorization" not in text.lower()


def test_a_deleted_recording_fails_only_its_case_naming_case_and_turn(recorded, tmp_path):
    """The second turn of a multi-turn finance case loses its recording: that case errors at
    turn 2 with the message, the run goes on, and no other case changes."""
    before = recorded["runs"]["finance"]
    copy = tmp_path / "cassette"
    copy.mkdir()
    for path in recordings(recorded["dir"]):
        (copy / path.parent.name).mkdir(exist_ok=True)
        (copy / path.parent.name / path.name).write_bytes(path.read_bytes())
    second = [
        p
        for p in recordings(copy)
        if json.loads(p.read_text())["request"]["body"]["messages"][-1]
        == {"role": "user", "content": "what about in 2008?"}
    ]
    assert len(second) == 1
    second[0].unlink()
    again = replay({**recorded, "dir": copy}, "finance")
    hit = [r for r in again.results if r.status != "passed" or r.error]
    changed = [a for a, b in zip(seen(again), seen(before), strict=True) if a != b]
    assert len(changed) == len(hit) >= 1
    for result in hit:
        assert result.status == "error"
        assert "ReplayMissError" in (result.error or "")
        assert f"case {result.case_id!r}" in result.error and "at turn 2" in result.error
        assert "record it with cache='record' or cache='auto'" in result.error
        assert result.turns[0].observation is not None  # turn 1 replayed as recorded
        assert result.blame == "infrastructure"  # not the agent's fault (ReplayMissError.blame)
    assert again.settings["cache"]["missed"] >= len(hit)  # later turns miss as well


def test_replay_needs_the_folder_and_a_known_mode(tmp_path):
    suite = Suite(id="s", cases=[Case(id="c", input=[Message(content="hi")])])
    with pytest.raises(ValueError, match="nothing to replay"):
        cl.run(suite, "demo:expense", cache="replay", cache_dir=tmp_path / "none", progress=False)
    with pytest.raises(ValueError, match="use 'record', 'replay', 'auto' or None"):
        cl.run(suite, "demo:expense", cache="always", cache_dir=tmp_path, progress=False)
    assert not (tmp_path / "none").exists()


def test_miss_error_is_infrastructure_and_survives_pickling():
    err = cl.ReplayMissError("replay: gone", case="c", turn=2, role="judge", key="ab")
    assert cl.ReplayMissError.blame == "infrastructure"
    back = pickle.loads(pickle.dumps(err))
    got = (str(back), back.case, back.turn, back.role, back.key)
    assert got == ("replay: gone", "c", 2, "judge", "ab")


def counter_app() -> tuple[dict[str, Any], list[int]]:
    """A nondeterministic model: every answer is the next number."""
    count = itertools.count(1)
    calls: list[int] = []

    def numbered(messages):
        calls.append(1)
        return f"sample {next(count)}"

    return {"numbered": numbered}, calls


def test_runs_n_records_n_samples_and_replays_each(tmp_path):
    suite = Suite(id="s", cases=[Case(id="c", input=[Message(content="pick a number")])])
    agents, calls = counter_app()
    with DemoServer(agents) as base:
        first = cl.run(suite, served("numbered", base), runs=3, cache="record",
                       cache_dir=tmp_path, progress=False)  # fmt: skip
    texts = [r.turns[0].observation.text for r in first.results]
    assert sorted(texts) == ["sample 1", "sample 2", "sample 3"] and len(calls) == 3
    assert len(recordings(tmp_path)) == 3
    again = cl.run(suite, served("numbered", base), runs=3, cache="replay",
                   cache_dir=tmp_path, progress=False)  # fmt: skip
    assert [r.turns[0].observation.text for r in again.results] == texts


def test_identical_calls_in_a_record_run_share_one_recording(tmp_path):
    """Two cases sending the same request get the same answer while recording, as they
    will in the replay: the record run and its replay cannot disagree."""
    suite = Suite(
        id="s", cases=[Case(id=c, input=[Message(content="same question")]) for c in "ab"]
    )
    agents, calls = counter_app()
    with DemoServer(agents) as base:
        run = cl.run(suite, served("numbered", base), cache="record", cache_dir=tmp_path,
                     progress=False)  # fmt: skip
    assert len(calls) == 1 and len(recordings(tmp_path)) == 1
    assert {r.turns[0].observation.text for r in run.results} == {"sample 1"}
    assert run.settings["cache"] | {"dir": ""} == {
        "mode": "record", "dir": "", "recorded": 1, "replayed": 1, "missed": 0,
    }  # fmt: skip


def test_auto_replays_what_exists_and_records_the_rest(tmp_path):
    one = Suite(id="s", cases=[Case(id="a", input=[Message(content="first")])])
    two = Suite(
        id="s",
        cases=[Case(id=c, input=[Message(content=t)]) for c, t in (("a", "first"), ("b", "new"))],
    )
    agents, calls = counter_app()
    with DemoServer(agents) as base:
        cl.run(one, served("numbered", base), cache="auto", cache_dir=tmp_path, progress=False)
        run = cl.run(two, served("numbered", base), cache="auto", cache_dir=tmp_path,
                     progress=False)  # fmt: skip
    assert len(calls) == 2  # "first" once, "new" once
    assert [r.turns[0].observation.text for r in run.results] == ["sample 1", "sample 2"]
    counts = run.settings["cache"]
    assert (counts["replayed"], counts["recorded"]) == (1, 1)


def test_record_mode_calls_live_again_and_keeps_the_new_answer(tmp_path):
    suite = Suite(id="s", cases=[Case(id="a", input=[Message(content="q")])])
    agents, calls = counter_app()
    with DemoServer(agents) as base:
        for _ in range(2):
            cl.run(suite, served("numbered", base), cache="record", cache_dir=tmp_path,
                   progress=False)  # fmt: skip
        again = cl.run(suite, served("numbered", base), cache="replay", cache_dir=tmp_path,
                       progress=False)  # fmt: skip
    assert len(calls) == 2
    assert again.results[0].turns[0].observation.text == "sample 2"


def test_no_secret_reaches_the_cassette(tmp_path):
    """Headers (the bearer key, an x-api-key) are dropped; a URL's password and query values
    are masked as safe_url masks them; a secret the server echoes is redacted."""
    key, token, password = "sk-live-Q7zX3kP9wL2m", "tok-8HfK2pQzW4", "pw-Hj4Ks9Lm2Xq7"

    def echo(messages):
        return f"you said {messages[-1]['content']}; my key is {key}"

    suite = Suite(id="s", cases=[Case(id="a", input=[Message(content="hello")])])
    with DemoServer({"echo": echo}) as base:
        url = base.replace("http://", f"http://me:{password}@") + f"/chat/completions?t={token}"
        agents = [
            cl.agents.openai("echo", base_url=base, api_key=key),
            cl.agents.http(url, request={"model": "echo", "messages": "{messages}"},
                           headers={"x-api-key": key}),
        ]  # fmt: skip
        for agent in agents:
            run = cl.run(suite, agent, cache="record", cache_dir=tmp_path, progress=False)
            assert run.results[0].status == "passed", run.results[0].error
    files = recordings(tmp_path)
    assert len(files) == 2
    text = "\n".join(p.read_text() for p in files)
    for secret in (key, token, password):
        assert secret not in text
    assert "t=***" in text and "me@127.0.0.1" in text and "my key is ***" in text
    assert "authorization" not in text.lower() and "x-api-key" not in text


def test_a_cached_function_agent_replays_its_reply_and_world(tmp_path):
    calls: list[str] = []

    @cl.cached
    def filer(messages, ctx):
        calls.append(messages[-1]["content"])
        ctx.world["filed"] = ctx.world.get("filed", 0) + 1
        return cl.Reply(
            text=f"Filed #{ctx.world['filed']}.",
            tool_calls=[cl.ToolCall("create_expense", {"amount": 3500}, {"ref": "EXP-1"})],
        )

    case = Case(
        id="a",
        input=[Message(content="file it")],
        assertions=[{"kind": "contains", "value": "Filed #1"}],
    )
    suite = Suite(id="s", cases=[case])
    first = cl.run(suite, filer, cache="record", cache_dir=tmp_path, progress=False)
    assert first.results[0].status == "passed" and len(calls) == 1

    def broken(messages, ctx):
        raise AssertionError("a replay must not call the function")

    broken = cl.cached(broken)
    broken.__qualname__ = filer.__qualname__  # the same agent, edited after recording
    again = cl.run(suite, broken, cache="replay", cache_dir=tmp_path, progress=False)
    assert seen(again) == seen(first)
    assert again.results[0].turns[0].observation.effects == {"filed": 1}
    [doc] = [json.loads(p.read_text()) for p in recordings(tmp_path)]
    assert doc["kind"] == "function" and doc["response"]["world"] == {"filed": 1}


def test_an_unmarked_function_runs_live_under_replay(tmp_path):
    suite = Suite(id="s", cases=[Case(id="a", input=[Message(content="hi")])])
    tmp_path.mkdir(exist_ok=True)
    run = cl.run(suite, lambda m: "live", cache="replay", cache_dir=tmp_path, progress=False)
    assert run.results[0].turns[0].observation.text == "live"
    assert run.settings["cache"]["replayed"] == run.settings["cache"]["missed"] == 0
    assert recordings(tmp_path) == []


def test_cached_rejects_what_it_cannot_mark():
    with pytest.raises(TypeError, match="@cached needs a function"):
        cl.cached(print)  # a builtin takes no attributes


def dynamic_with_judge() -> Suite:
    judged = Case(
        id="judged",
        input=[Message(content="a travel expense please")],
        assertions=[{"kind": "judge", "question": "Was the expense filed?"}],
    )
    return Suite(id="s", cases=[expense_case("trip"), judged])


def user_llm(messages):
    said = "Travel, $3500" if "Assistant:" in messages[-1]["content"] else "File an expense"
    return json.dumps({"message": said, "goal_achieved": False, "reasoning": "next"})


def judge_llm(messages):
    return json.dumps({"answer": "yes", "reason": "it says filed"})


def test_simulator_and_judge_calls_are_recorded_and_replayed(tmp_path):
    apps = {"agent": expense_agent, "user-llm": user_llm, "judge": judge_llm}
    with DemoServer(apps) as base:
        options = {
            "simulator": served("user-llm", base),
            "judge": served("judge", base),
            "cache_dir": tmp_path,
            "progress": False,
        }
        first = cl.run(dynamic_with_judge(), served("agent", base), cache="record", **options)
    assert [r.status for r in first.results] == ["passed", "passed"], first.results[0].error
    kinds = [json.loads(p.read_text())["request"]["body"]["model"] for p in recordings(tmp_path)]
    assert sorted(kinds) == ["agent", "agent", "agent", "judge", "user-llm", "user-llm"]
    options |= {"simulator": served("user-llm", base), "judge": served("judge", base)}
    again = cl.run(dynamic_with_judge(), served("agent", base), cache="replay", **options)
    assert seen(again) == seen(first)
    judged = [p for p in recordings(tmp_path) if '"judge"' in p.read_text()]
    judged[0].unlink()
    options |= {"simulator": served("user-llm", base), "judge": served("judge", base)}
    missed = cl.run(dynamic_with_judge(), served("agent", base), cache="replay", **options)
    assert seen(missed)[0] == seen(first)[0]  # the dynamic case kept its recordings
    [check] = missed.results[1].turns[0].assertions
    assert missed.results[1].status == check.status == "error"
    assert "ReplayMissError" in check.message
    assert "the judge call of case 'judged' at turn 1" in check.message
    assert check.blame == missed.results[1].blame == "infrastructure"


def test_the_cli_records_then_replays_with_the_server_stopped(tmp_path):
    cassette = tmp_path / "rec"
    with DemoServer() as base:
        env = {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "sk-test-key", "PYTHONPATH": str(ROOT)}
        record = _cli(tmp_path, env, "--cache", "record", "--cache-dir", str(cassette))
    assert "cache (record" in record.stderr and " recorded, 0 missed" in record.stderr
    env.pop("OPENAI_API_KEY")  # CI has no key: a replay needs none
    again = _cli(tmp_path, env, "--cache", "replay", "--cache-dir", str(cassette))
    assert again.returncode == record.returncode == 0, again.stderr
    assert "0 recorded, 0 missed" in again.stderr
    first = json.loads((tmp_path / "record.json").read_text())
    second = json.loads((tmp_path / "replay.json").read_text())
    assert [r["status"] for r in first["results"]] == [r["status"] for r in second["results"]]
    assert second["settings"]["cache"]["mode"] == "replay"


def test_convlab_yaml_holds_the_cache_settings(tmp_path):
    from convlab._cli_run import read_config
    from convlab.errors import ConvlabError

    (tmp_path / "convlab.yaml").write_text("agent: demo:finance\ncache: auto\ncache_dir: rec\n")
    assert read_config(tmp_path) == {
        "agent": "demo:finance", "cache": "auto", "cache_dir": str(tmp_path / "rec"),
    }  # fmt: skip
    (tmp_path / "convlab.yaml").write_text("cache: sometimes\n")
    with pytest.raises(ConvlabError, match="cache: expected record, replay or auto"):
        read_config(tmp_path)


def _cli(folder: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    mode = flags[1]
    suite = folder / "suite"
    if not suite.exists():
        suite.mkdir()
        (suite / "agent.yaml").write_text((EXAMPLES / "finance" / "agent.yaml").read_text())
    args = ["run", "-i", str(suite), "-n", "openai:finance", "-o", str(folder / f"{mode}.json")]
    clean = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [sys.executable, "-m", "convlab.cli", *args, *flags, "--run", "convfinqa-0$"],
        capture_output=True,
        text=True,
        env=clean | env,
        timeout=120,
    )


def test_arun_and_start_take_the_same_cache_options(tmp_path):
    suite = Suite(id="s", cases=[Case(id="a", input=[Message(content="q")])])
    agents, calls = counter_app()
    with DemoServer(agents) as base:
        handle = cl.start(suite, served("numbered", base), cache="record", cache_dir=tmp_path,
                          progress=False)  # fmt: skip
        first = handle.wait(60)
    replaying = cl.arun(
        suite, served("numbered", base), cache="replay", cache_dir=tmp_path, progress=False
    )
    again = asyncio.run(replaying)
    assert len(calls) == 1 and seen(again) == seen(first)
    assert again.settings["cache"]["replayed"] == 1


def test_a_python_tests_judge_goes_through_the_cassette(tmp_path):
    """A thinkingbox test runs in a worker thread; its judge's calls still carry the
    instance's cache scope (recorded, then replayed with the server gone)."""
    from test_checks_code import conversation, pytest_spec

    from convlab.agents.cache import open_cassette, recording
    from convlab.checks import CheckContext, evaluate

    async def judged(mode: str, base: str) -> tuple[Any, Any]:
        cassette = open_cassette(mode, tmp_path)
        with recording(cassette, "c"):
            ctx = CheckContext(**conversation(), judge=served("judge", base), scope="final")
            return await evaluate(pytest_spec("test_judged"), ctx), cassette

    with DemoServer({"judge": lambda messages: "Yes"}) as base:
        res, cassette = asyncio.run(judged("record", base))
    assert res.status == "passed" and cassette.recorded == 1
    res, cassette = asyncio.run(judged("replay", base))
    assert res.status == "passed", res.message
    assert (cassette.replayed, cassette.missed) == (1, 0)


def test_custom_header_values_never_reach_a_file_or_an_error(tmp_path):
    """Azure's `api-key`, a `Cookie` and an `X-Api-Key`, echoed by the server in its replies
    and in an error, are masked in the recordings, the store, run.json and the error text,
    as the key is: every header a user passes, whatever its name."""
    from aiohttp import web
    from fault_server import FaultServer, chat_reply

    azure, cookie, xkey = "azure-Kq83Hd02Lm", "sess-Pz72Wq19Xc", "xk-Tn48Rb67Vd"

    async def echo(request: web.Request, counts: Any) -> web.StreamResponse:
        said = " ".join(f"{k}={v}" for k, v in request.headers.items())
        word = (await request.json())["messages"][-1]["content"]
        if word == "fail":
            return web.json_response({"error": f"denied: {said}"}, status=500)
        return chat_reply(f"you sent {said}")

    headers = {"api-key": azure, "Cookie": f"theme=dark; session={cookie}", "X-Api-Key": xkey}
    cases = [Case(id=w, input=[Message(content=w)]) for w in ("hello", "fail")]
    suite = Suite(id="s", cases=cases)
    with FaultServer(echo) as server:
        agents = [
            cl.agents.openai("m", base_url=server.base + "/v1", headers=headers),
            cl.agents.http(server.url, headers=headers),
        ]
        texts = []
        for n, agent in enumerate(agents):
            store = tmp_path / f"store{n}"
            run = cl.run(suite, agent, cache="record", cache_dir=tmp_path / "cache",
                         store=store, retries=0, progress=False)  # fmt: skip
            hello, fail = run.results
            assert hello.status == "passed" and "you sent" in (hello.turns[0].observation.text)
            assert fail.status == "error" and "denied" in (fail.error or "")
            texts += [fail.error or "", run.save(tmp_path / f"run{n}.json").read_text()]
            texts += [p.read_text() for p in store.rglob("*") if p.is_file()]
    texts += [p.read_text() for p in recordings(tmp_path / "cache")]
    text = "\n".join(texts)
    assert "api-key=***" in text.lower()
    for secret in (azure, cookie, xkey):
        assert secret not in text


def test_a_cache_that_cannot_be_written_warns_once_and_keeps_the_live_answers(tmp_path):
    """Recordings that cannot be written (here each recording's place is taken by a folder,
    as a read-only folder or a full disk would refuse it): every case still passes on its
    live answer, one warning says why, the counts say how many, no .tmp file is left."""
    cases = [
        Case(id=f"c{i}", input=[Message(content=f"hi {i}")],
             assertions=[{"kind": "contains", "value": f"said hi {i}"}])
        for i in range(3)
    ]  # fmt: skip
    suite = Suite(id="s", cases=cases)
    agent = cl.cached(lambda messages: f"you said {messages[-1]['content']}")
    first = tmp_path / "first"
    cl.run(suite, agent, cache="record", cache_dir=first, progress=False)
    blocked = tmp_path / "blocked"
    for path in recordings(first):  # the same keys: a folder where each file must go
        (blocked / path.relative_to(first) / "taken").mkdir(parents=True)
    with pytest.warns(RuntimeWarning, match="cannot write recording") as caught:
        run = cl.run(suite, agent, cache="record", cache_dir=blocked, progress=False)
    assert len(caught) == 1
    assert [r.status for r in run.results] == ["passed"] * 3, [r.error for r in run.results]
    counts = run.settings["cache"]
    assert counts["recorded"] == 0 and counts["unwritten"] == 3
    assert "cannot write recording" in counts["write_error"]
    assert list(blocked.rglob("*.tmp")) == []


# ---------------------------------------------------------------- replay trusts nothing it reads


def _echo_cases(*words: str) -> Suite:
    return Suite(id="s", cases=[Case(id=w, input=[Message(content=w)]) for w in words])


_echoed = cl.cached(lambda messages: f"you said {messages[-1]['content']}")


def test_a_fifo_in_the_cache_is_refused_without_hanging_the_replay(tmp_path):
    import os
    import threading

    suite = _echo_cases("hello")
    cl.run(suite, _echoed, cache="record", cache_dir=tmp_path, progress=False)
    [path] = recordings(tmp_path)
    path.unlink()
    os.mkfifo(path)  # a read of it blocks until someone writes: the loop would stop
    got: list[cl.Run] = []

    def replay() -> None:
        got.append(cl.run(suite, _echoed, cache="replay", cache_dir=tmp_path, progress=False))

    thread = threading.Thread(target=replay, daemon=True)
    thread.start()
    thread.join(20)
    if thread.is_alive():  # the old reader: set it free, then fail
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
        pytest.fail("the replay hung on a FIFO in the cache folder")
    [result] = got[0].results
    assert result.status == "error" and "not a regular file" in (result.error or "")


def test_a_linked_fan_out_folder_is_never_written_through(tmp_path):
    suite = _echo_cases("hello")
    first = tmp_path / "first"
    cl.run(suite, _echoed, cache="record", cache_dir=first, progress=False)
    [path] = recordings(first)
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / path.parent.name).symlink_to(outside, target_is_directory=True)
    with pytest.warns(RuntimeWarning, match="link"):
        run = cl.run(suite, _echoed, cache="record", cache_dir=cache, progress=False)
    assert run.results[0].status == "passed"
    assert list(outside.iterdir()) == []


def test_a_recording_copied_under_another_calls_name_is_not_replayed(tmp_path):
    suite = _echo_cases("hello", "goodbye")
    cl.run(suite, _echoed, cache="record", cache_dir=tmp_path, progress=False)
    files = {json.loads(p.read_text())["request"]["messages"][-1]["content"]: p
             for p in recordings(tmp_path)}  # fmt: skip
    files["goodbye"].write_text(files["hello"].read_text())
    run = cl.run(suite, _echoed, cache="replay", cache_dir=tmp_path, progress=False)
    hello, goodbye = run.results
    assert hello.status == "passed" and hello.turns[0].observation.text == "you said hello"
    assert goodbye.status == "error" and "records another call" in (goodbye.error or "")


def test_query_values_choose_the_recording_and_a_4xx_is_never_recorded(tmp_path):
    from aiohttp import web
    from fault_server import FaultServer

    async def versioned(request: web.Request, counts: Any) -> web.StreamResponse:
        counts.accepted += 1
        if (await request.json())["messages"][-1]["content"] == "deny":
            return web.json_response({"error": "bad key"}, status=401)
        said = {"2024-01-01": "the old API", "2025-05-05": "the new API"}
        return web.json_response({"text": said[request.query["api-version"]]})

    with FaultServer(versioned, path="/chat") as server:

        def agent(version: str) -> Any:
            return cl.agents.http(f"{server.url}?api-version={version}")

        recorded = cl.run(_echo_cases("hello"), agent("2024-01-01"), cache="record",
                          cache_dir=tmp_path, progress=False)  # fmt: skip
        assert recorded.results[0].turns[0].observation.text == "the old API"
        other = cl.run(_echo_cases("hello"), agent("2025-05-05"), cache="auto",
                       cache_dir=tmp_path, progress=False)  # fmt: skip
        assert other.results[0].turns[0].observation.text == "the new API"
        assert server.counts.accepted == 2  # the other version went live
        for _ in range(2):
            denied = cl.run(_echo_cases("deny"), agent("2024-01-01"), cache="auto",
                            cache_dir=tmp_path, retries=0, progress=False)  # fmt: skip
            assert denied.results[0].status == "error"
        assert server.counts.accepted == 4  # the 401 was asked again, not replayed
    assert len(recordings(tmp_path)) == 2
    assert "2024-01-01" not in "".join(p.read_text() for p in recordings(tmp_path))
