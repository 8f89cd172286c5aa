"""Blame: every instance that did not pass says whose fault it is, decided where it failed,
and only the agent's failures count towards the agent's pass rate (stability, cards,
console, reports). Every class comes from a real run: function agents, a simulator, a judge,
hooks, a bad regex at run time, and a local HTTP server answering 500 and 429."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fault_server import FaultServer, chat_faults, error, hang

import convlab as cl
from convlab.model import Case, Checkpoint, Message, SimulatorSpec, Suite
from convlab.model.blame import BLAMES, blame_of
from convlab.report.console import ConsoleProgress


def std(case_id: str, text: str, *specs: dict[str, Any], **kw: Any) -> Case:
    return Case(id=case_id, input=[Message(content=text)], assertions=list(specs), **kw)


def says(value: str) -> dict[str, Any]:
    return {"kind": "contains", "value": value}


class ReplayMiss(Exception):
    """What the cache's replay miss looks like to blame: an exception that says whose it is."""

    blame = "infrastructure"


def agent(messages: list[dict[str, Any]], ctx: Any) -> Any:
    """A function agent whose behaviour the case id picks; `mixed` changes with the run."""
    case = ctx.case.id
    if case == "wrong":
        return "no idea"
    if case == "raises":
        raise RuntimeError("agent bug")
    if case == "regex":  # calls the tool whose result the suite matches with a bad regex
        return cl.Reply(text="ok", tool_calls=[cl.ToolCall("lookup", {"q": 1}, result={"id": "A"})])
    if case == "replay":
        raise ReplayMiss("no recording for this call")
    if case == "mixed":
        run = int(ctx.instance.rpartition("#")[2]) if "#" in ctx.instance else 0
        if run == 0:
            return "no idea"  # the agent's own failure
        if run == 1:
            raise ConnectionError("connection reset by peer")  # the network's
    if case == "sim" and len(messages) > 1:
        return "Which type of expense?"
    return "answer: ok"


def simulator(messages: list[dict[str, Any]], ctx: Any) -> str:
    raise ValueError("simulator crashed")


def judge(messages: list[dict[str, Any]]) -> str:
    return "perhaps"  # neither yes nor no: unparseable


def zoo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Suite:
    """One case per blame class (and a passing one, and a mixed one)."""
    (tmp_path / "blamehooks.py").write_text(
        "def before(case):\n    raise RuntimeError('fixture database is down')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    regex = {"kind": "tool_result", "tool": "lookup", "result": {"id": "regex:("}}
    dynamic = Case(
        id="sim",
        mode="dynamic",
        simulator=SimulatorSpec(persona="employee", goal="file an expense"),
        checkpoints=[Checkpoint(id="asked", assertion=says("type"))],
    )
    return Suite(
        id="zoo",
        cases=[
            std("good", "hi", says("ok")),
            std("wrong", "hi", says("ok")),
            std("raises", "hi", says("ok")),
            dynamic,
            std("judged", "hi", {"kind": "judge", "question": "Is it polite?"}),
            std("regex", "hi", regex),
            std("hooked", "hi", says("ok"), hooks={"before": "blamehooks:before"}),
            std("replay", "hi", says("ok")),
            std("mixed", "hi", says("ok")),
        ],
    )


@pytest.fixture
def zoo_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[cl.Run, str]:
    """The zoo run three times, and what its console printed."""
    console = io.StringIO()
    run = cl.run(
        zoo(tmp_path, monkeypatch),
        agent,
        runs=3,
        parallel=2,
        simulator=simulator,
        judge=judge,
        progress=ConsoleProgress(stream=console, quiet=False, color=False),
    )
    return run, console.getvalue()


@pytest.fixture
def zoo_run(zoo_out: tuple[cl.Run, str]) -> cl.Run:
    return zoo_out[0]


def test_every_instance_that_did_not_pass_names_whose_fault_it_is(zoo_run: cl.Run) -> None:
    df = zoo_run.df
    blame = {
        cid: set(group["blame"].fillna("-")) for cid, group in df.groupby("case_id", sort=False)
    }
    assert blame == {
        "good": {"-"},
        "wrong": {"agent"},
        "raises": {"agent"},
        "sim": {"simulator"},
        "judged": {"judge"},
        "regex": {"suite"},
        "hooked": {"hook"},
        "replay": {"infrastructure"},
        "mixed": {"agent", "infrastructure", "-"},
    }
    assert df.loc[df["status"] == "passed", "blame"].isna().all()
    assert df.loc[df["status"] != "passed", "blame"].isin(BLAMES).all()
    # the reasons still say what happened, in the words of where it happened
    first = df.drop_duplicates("case_id").set_index("case_id")["error"]
    assert "simulator error: ValueError: simulator crashed" in first["sim"]
    assert "judge answer is not yes/no" in first["judged"]
    assert "unterminated subpattern" in first["regex"]
    assert first["hooked"] == "before hook failed: RuntimeError: fixture database is down"


def test_stability_counts_only_the_agents_failures(zoo_run: cl.Run) -> None:
    st = zoo_run.stability().set_index("case_id")
    # mixed: one pass, one agent failure, one dropped connection -> 1 of 2, not 1 of 3
    assert st.loc["mixed", "runs"] == 2 and st.loc["mixed", "passed"] == 1
    assert st.loc["mixed", "pass_rate"] == 50.0 and st.loc["mixed", "verdict"] == "flaky"
    assert st.loc["mixed", "not_agent"] == 1
    assert st.loc["mixed", "not_agent_blame"] == "infrastructure 1"
    # nothing the agent did is judged in these: no runs, no pass rate, no class
    for cid, why in [("sim", "simulator 3"), ("judged", "judge 3"), ("regex", "suite 3")]:
        assert st.loc[cid, "runs"] == 0 and math.isnan(st.loc[cid, "pass_rate"]), cid
        assert st.loc[cid, "not_agent_blame"] == why and st.loc[cid, "not_agent"] == 3
    assert st.loc["hooked", "not_agent_blame"] == "hook 3"
    assert st.loc["replay", "not_agent_blame"] == "infrastructure 3"
    # the agent's own failures still count in full
    assert st.loc["wrong", "pass_rate"] == 0.0 and st.loc["raises", "runs"] == 3
    assert st.loc["good", "pass_rate"] == 100.0
    assert "only the agent's failures are runs" in st.attrs["note"]
    s = zoo_run.summary
    assert s["blame"] == {
        "agent": 7,
        "simulator": 3,
        "judge": 3,
        "infrastructure": 4,
        "suite": 3,
        "hook": 3,
    }
    assert s["not_agent"] == 16
    # mean over the cases the agent was judged on: good 100, wrong 0, raises 0, mixed 50
    assert s["pass_rate"] == pytest.approx(37.5)


def test_the_card_and_the_console_show_the_breakdown(zoo_out: tuple[cl.Run, str]) -> None:
    zoo_run, console = zoo_out
    text = str(zoo_run)
    assert (
        "not passed, by blame: agent 7, simulator 3, judge 3, infrastructure 4, suite 3, hook 3"
        " (only the agent's count towards the pass rate)" in text
    )
    # the pass rate is a mean over the 4 cases the agent was judged on, and says so
    assert "pass rate 37.5% (mean over 4 of 9 cases;" in text
    page = zoo_run._repr_mimebundle_()["text/html"]
    assert "not passed, by blame:" in page and "<b>3</b> judge" in page
    assert "cl-blame-agent" in page
    blame_row = next(line for line in console.splitlines() if line.strip().startswith("Blame:"))
    assert "agent 7, simulator 3, judge 3, infrastructure 4, suite 3, hook 3" in blame_row
    stability = console[console.index("Stability") : console.index("Summary")]
    assert "Not the agent's" in stability
    mixed = next(line for line in stability.splitlines() if line.strip().startswith("mixed"))
    assert mixed.split()[1:] == ["2", "1", "50.0%", "unstable", "infrastructure", "1"]
    assert "ERROR (" in console and "[blame: judge]" in console and "[blame: agent]" not in console


def test_reports_show_the_blame(zoo_run: cl.Run, tmp_path: Path) -> None:
    md = zoo_run.save(tmp_path / "r.md").read_text()
    assert "**Not passed, by blame:** agent 7, simulator 3, judge 3" in md
    assert "Only the agent's failures count towards the pass rate" in md
    assert "| `judged` |  | 1 | 1 | error | judge |" in md
    page = zoo_run.save(tmp_path / "r.html").read_text()
    assert "blame: simulator" in page and "not passed, by blame:" in page
    xml = zoo_run.save(tmp_path / "r.xml").read_text()
    assert "status: error\nblame: hook\n" in xml and "error: before hook failed" in xml


def test_a_saved_run_keeps_blame_and_an_old_one_gets_it_inferred(
    zoo_run: cl.Run, tmp_path: Path
) -> None:
    path = zoo_run.save(tmp_path / "run.json")
    again = cl.load_run(path)
    assert list(again.df["blame"].fillna("-")) == list(zoo_run.df["blame"].fillna("-"))
    # a run saved before blame existed: no blame anywhere in the file
    data = json.loads(path.read_text())
    for r in data["results"]:
        r.pop("blame", None)
        checks = [*r.get("assertions", [])]
        checks += [a for t in r.get("turns", []) for a in t.get("assertions", [])]
        for a in checks:
            a.pop("blame", None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    inferred = cl.load_run(old).df.drop_duplicates("case_id").set_index("case_id")["blame"]
    # what the records show is inferred: failed checks, a judge check's error, a check's error
    assert inferred["wrong"] == "agent" and inferred["judged"] == "judge"
    assert inferred["regex"] == "suite" and pd.isna(inferred["good"])
    # what they cannot show stays the agent's, as it counted before blame existed
    assert inferred["hooked"] == "agent"


BY_WORD = {
    "500": error(500, retry_after="0"),
    "429": error(429, retry_after="0"),
    "401": error(401),
    "slow": hang,
}


def judge_fails(word: str) -> str:
    """The judge's prompt gets the same 500 as the word "500"."""
    return "500" if "You are a judge" in word else word


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    """An OpenAI-compatible endpoint on 127.0.0.1 whose answer the last message picks."""
    with FaultServer(chat_faults(BY_WORD, route=judge_fails)) as srv:
        yield srv


def test_http_500_429_and_timeouts_are_infrastructure(server: FaultServer) -> None:
    words = ["ok", "500", "429", "slow", "401"]
    cases = [std(w, w, says("echo")) for w in words]
    cases.append(std("judged", "ok", {"kind": "judge", "question": "Is it polite?"}))
    url = f"{server.base}/v1"
    http = cl.agents.openai("m", base_url=url, api_key="sk-test")
    console = io.StringIO()
    run = cl.run(
        Suite(id="net", cases=cases),
        http,
        judge=cl.agents.openai("j", base_url=url, api_key="sk-test"),
        parallel=6,
        timeout=1.5,
        retries=1,
        progress=ConsoleProgress(stream=console, quiet=False, color=False),
    )
    by = {r.case_id: r for r in run.results}
    assert by["ok"].status == "passed" and by["ok"].blame is None
    assert (by["500"].status, by["500"].blame, by["500"].attempts) == ("error", "infrastructure", 2)
    assert (by["429"].status, by["429"].blame, by["429"].attempts) == ("error", "infrastructure", 2)
    assert (by["slow"].status, by["slow"].blame) == ("timeout", "infrastructure")
    # the judge's endpoint failing is the network's, not the judge's nor the agent's
    assert (by["judged"].status, by["judged"].blame) == ("error", "infrastructure")
    assert by["judged"].assertions == [] and by["judged"].turns[0].assertions[0].blame == (
        "infrastructure"
    )
    # a 401 is not transient: the agent (its configuration) could not answer
    assert (by["401"].status, by["401"].blame) == ("error", "agent")
    st = run.stability().set_index("case_id")
    assert st.loc["500", "runs"] == 0 and st.loc["500", "not_agent_blame"] == "infrastructure 1"
    assert run.summary["blame"]["infrastructure"] == 4 and run.summary["pass_rate"] == 50.0
    out = console.getvalue()
    assert out.count("[blame: infrastructure]") == 4 and "[blame: agent]" not in out
    assert "Blame:     agent 1, infrastructure 4 (only the agent's count" in out


def test_hooks_are_blamed_for_their_own_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afterhooks.py").write_text(
        "def after(case, outcome, data):\n    raise OSError('cleanup failed')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    hooks = {"after": "afterhooks:after"}
    suite = Suite(
        id="h", cases=[std("fine", "hi", says("ok"), hooks=hooks), std("bad", "hi", says("zzz"))]
    )
    by = {r.case_id: r for r in cl.run(suite, agent, progress=False).results}
    # an after hook failing a passed instance is the hook's ...
    assert (by["fine"].status, by["fine"].blame) == ("error", "hook")
    assert "after hook failed: OSError: cleanup failed" in (by["fine"].error or "")
    # ... but never hides a check the agent failed
    assert (by["bad"].status, by["bad"].blame) == ("failed", "agent")

    def before(suite: Suite) -> None:
        raise RuntimeError("no database")

    run = cl.run(suite, agent, before=before, progress=False)
    assert [(r.status, r.blame) for r in run.results] == [("error", "hook")] * 2
    assert run.summary["pass_rate"] is None and run.summary["blame"]["hook"] == 2


def test_the_suites_own_code_is_the_suites_fault(register_evaluator: Any) -> None:
    @register_evaluator("blame-broken")
    def broken(ctx: Any, parameters: Any) -> bool:
        raise KeyError("threshold")

    crash = "def test_reply(x):\n    return undefined_name\n"
    suite = Suite(
        id="own",
        cases=[
            std("custom", "hi", {"kind": "custom", "evaluator": "blame-broken"}),
            std(
                "pytest",
                "hi",
                {
                    "kind": "python_test",
                    "code": crash,
                    "function": "test_reply",
                    "file": "t.py",
                    "line": 1,
                },
            ),
            std(
                "composite",
                "hi",
                {"kind": "all", "assertions": [says("ok"), {"kind": "judge", "question": "?"}]},
            ),
        ],
    )
    by = {r.case_id: r for r in cl.run(suite, agent, progress=False).results}
    assert (by["custom"].status, by["custom"].blame) == ("error", "suite")
    # except a thinkingbox test that raised: `tb agg` counts it as a run that did not pass
    # (agg_main.py `aggregate_results`), so it is the agent's, as a failed run would be
    assert (by["pytest"].status, by["pytest"].blame) == ("error", "agent")
    assert "NameError" in (by["pytest"].error or "")
    # a composite's error is its erroring child's: here no judge is configured
    assert (by["composite"].status, by["composite"].blame) == ("error", "judge")


def test_a_yao_validator_without_the_agents_prefix_fails_as_the_suites_fault() -> None:
    # Yao (agent/test/assert.go assertAgent) fails the assertion; the file is at fault
    checked = std("yao", "hi", says("ok"), {"kind": "agent", "use": "validator"})
    fine = std("fine", "hi", says("nope"))
    by = {
        r.case_id: r
        for r in cl.run(Suite(id="y", cases=[checked, fine]), agent, progress=False).results
    }
    assert (by["yao"].status, by["yao"].blame) == ("failed", "suite")
    assert (by["fine"].status, by["fine"].blame) == ("failed", "agent")
    # with a failing reply check too, the instance is the agent's again
    both = std("both", "hi", says("nope"), {"kind": "agent", "use": "validator"})
    [r] = cl.run(Suite(id="y", cases=[both]), agent, progress=False).results
    assert (r.status, r.blame) == ("failed", "agent")


def test_an_exception_may_say_whose_fault_it_is() -> None:
    class Mine(Exception):
        blame = "simulator"

    assert blame_of(Mine(), "agent") == "simulator"
    assert blame_of(ReplayMiss(), "judge") == "infrastructure"
    assert blame_of(TimeoutError(), "agent") == "infrastructure"
    assert blame_of(ValueError(), "judge") == "judge"
    wrapped = RuntimeError("wrapper")
    wrapped.__cause__ = Mine()
    assert blame_of(wrapped, "agent") == "simulator"

    class NotAClass(Exception):
        blame = "the moon"

    assert blame_of(NotAClass(), "hook") == "hook"


STORE_SCRIPT = """
import json, resource, signal, sys
import convlab as cl
from convlab.model import Case, Message, Suite

suite = Suite(id="s", cases=[
    Case(id=f"c{i}", input=[Message(content="hi")], assertions=[{"kind": "contains", "value": "o"}])
    for i in range(6)
])
agent = lambda messages: "ok"
sized = sys.argv[1] + ".sized"
cl.run(suite, agent, store=sized, parallel=1, progress=False)
header, first, *_ = open(sized, "rb").read().splitlines(keepends=True)
# the disk takes the header and two results, then refuses (a file size limit, as a full disk)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = len(header) + 2 * len(first) + 10
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
run = cl.run(suite, agent, store=sys.argv[1], parallel=1, progress=False)
print(json.dumps({"results": [[r.status, r.blame, r.error] for r in run.results],
                  "error": run.error, "pass_rate": run.summary["pass_rate"]}))
"""


def test_a_store_that_cannot_be_written_is_infrastructure(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "store_full.py"
    script.write_text(STORE_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    statuses = [(status, blame) for status, blame, _ in out["results"]]
    # the run went on: the two written instances passed, the rest could not be stored
    assert statuses[:2] == [("passed", None)] * 2
    assert statuses[2:] == [("error", "infrastructure")] * 4
    assert "results store" in out["results"][2][2] and "File too large" in out["results"][2][2]
    assert out["pass_rate"] == 100.0  # the agent answered every one of them right
    assert "closing results store" in out["error"]


def test_a_frame_without_blame_counts_every_failure_as_the_agents() -> None:
    """Frames built by hand (or by older code) keep the rule they had: all failures count."""
    from convlab.analysis.stats import stability, summary

    df = pd.DataFrame(
        {
            "case_id": ["a", "a", "a"],
            "variant": ["", "", ""],
            "status": ["passed", "error", "timeout"],
            "duration_ms": [1.0, 2.0, 3.0],
        }
    )
    st = stability(df)
    assert (st.loc[0, "runs"], st.loc[0, "not_agent"], st.loc[0, "not_agent_blame"]) == (3, 0, "")
    assert summary(df, st)["blame"]["agent"] == 2
    df["blame"] = [None, "judge", "infrastructure"]
    st = stability(df)
    assert (st.loc[0, "runs"], st.loc[0, "pass_rate"]) == (1, 100.0)
    assert st.loc[0, "not_agent_blame"] == "judge 1, infrastructure 1"


def test_the_live_tree_marks_failures_that_are_not_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convlab.notebook.progress import LiveTree

    tree = LiveTree()
    tree._handle = None  # no kernel: the widgets' state is all there is
    cl.run(zoo(tmp_path, monkeypatch), agent, simulator=simulator, judge=judge, progress=tree)
    body = tree.body.value
    for blame in ("simulator", "judge", "suite", "hook", "infrastructure"):
        assert f"[blame: {blame}]" in body, blame
    assert "[blame: agent]" not in body and "RuntimeError: agent bug" in body
