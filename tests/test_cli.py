"""The CLI as a user types it: every command in a real subprocess, its output and exit code.

Exit codes (convlab/cli.py): 0 all passed, 1 something did not pass, 2 invalid suite or
usage, 3 an unexpected exception (traceback printed). Independent commands are started
together so the module stays fast.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
COMMANDS = ("validate", "run", "ask", "report", "demo", "assertions", "serve-demo")


@dataclass
class Done:
    code: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [extra.pop("PYTHONPATH", ""), str(ROOT)])))
    env.update(extra)
    return env


def start(*args: str, cwd: Path | None = None, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "convlab.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=_env(**env),
    )


def finish(proc: subprocess.Popen[str]) -> Done:
    out, err = proc.communicate(timeout=180)
    return Done(proc.returncode, out, err)


def cli(*args: str, cwd: Path | None = None, **env: str) -> Done:
    return finish(start(*args, cwd=cwd, **env))


def many(*commands: tuple[str, ...], cwd: Path | None = None, **env: str) -> list[Done]:
    """Run independent commands at the same time; results in order."""
    procs = [start(*c, cwd=cwd, **env) for c in commands]
    return [finish(p) for p in procs]


def test_every_command_has_help_with_an_example():
    done = many(("--help",), *((c, "--help") for c in COMMANDS))
    for cmd, d in zip(("convlab", *COMMANDS), done, strict=True):
        assert d.code == 0, (cmd, d.err)
        assert "example:" in d.out and "convlab " in d.out.split("example:")[1], cmd
    assert "exit codes" in done[0].out and "ask" in done[0].out


def test_validate_exit_codes(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": "x"}\n{"id": \n{"input": "no id"}\n')
    ok, invalid, missing = many(("validate", str(EXAMPLES)), ("validate", str(bad)), ("validate",))
    assert ok.code == 0 and "valid: 30 case(s)" in ok.out
    assert invalid.code == 2 and invalid.out == ""
    lines = invalid.err.splitlines()  # every problem on stderr, one per line, no traceback
    assert lines[0].startswith(f"{bad}:2: ") and any(ln.startswith(f"{bad}:3: ") for ln in lines)
    assert "Traceback" not in invalid.err
    assert missing.code == 2 and "the following arguments are required" in missing.err


def test_run_outputs_and_exit_codes_0_and_1(tmp_path):
    finance = tmp_path / "finance"
    shutil.copytree(EXAMPLES / "finance", finance, ignore=shutil.ignore_patterns("output-*"))
    out = tmp_path / "r.json"
    failing, passing, listing = many(
        ("run", "-i", str(finance), "-n", "demo:finance", "-o", str(out)),
        ("run", "-i", str(finance), "-n", "demo:finance", "--run", "^convfinqa-0$"),
        ("run", "-i", str(EXAMPLES / "expense"), "--dry-run"),
    )
    assert failing.code == 1, failing.err  # the finance example fails one case on purpose
    statuses = {r["case_id"]: r["status"] for r in json.loads(out.read_text())["results"]}
    assert statuses["percentage-as-text"] == "failed" and statuses["convfinqa-0"] == "passed"
    assert f"results written to {out}" in failing.err
    assert passing.code == 0, passing.err
    # no -o in file mode: Yao's output-{timestamp}.jsonl beside the input
    written = list(finance.glob("output-*.jsonl"))
    assert len(written) == 1 and re.fullmatch(r"output-\d{14}\.jsonl", written[0].name)
    assert f"results written to {written[0]}" in passing.err
    records = [json.loads(line) for line in written[0].read_text().splitlines()]
    assert any(r.get("type") == "summary" for r in records)
    assert listing.code == 0 and "expense-turn1" in listing.out


def test_failed_hook_agent_error_and_quick_message(tmp_path):
    (tmp_path / "hooks.py").write_text(
        "def bad_after(run):\n    raise RuntimeError('after hook broke')\n"
        "def broken_agent(messages):\n    raise KeyError('agent bug')\n"
    )
    expense = str(EXAMPLES / "expense")
    hook, agent_error, quick, quick_bad = many(
        ("run", "-i", expense, "-n", "demo:expense", "--run", "greeting", "--after",
         "hooks:bad_after", "-o", str(tmp_path / "h.json")),
        ("run", "-i", expense, "-n", "hooks:broken_agent", "--run", "greeting",
         "-o", str(tmp_path / "e.json")),
        ("run", "-i", "I want to submit an expense", "-n", "demo:expense"),
        ("ask", "demo:expense", "I want to submit an expense", "--assert", "contains:zzz"),
        cwd=tmp_path,
        PYTHONPATH=str(tmp_path),
    )  # fmt: skip
    assert hook.code == 1 and "after hook failed: RuntimeError" in hook.err
    assert json.loads((tmp_path / "h.json").read_text())["status"] == "failed"
    # an agent raising while it answers is the case's error (exit 1), not a crash
    assert agent_error.code == 1 and "Traceback" not in agent_error.err
    assert json.loads((tmp_path / "e.json").read_text())["results"][0]["status"] == "error"
    assert quick.code == 0 and "agent> Hello!" in quick.out
    assert quick_bad.code == 1 and "does not contain 'zzz'" in quick_bad.out


def test_ask_command(tmp_path):
    ok, bad_spec, no_key = many(
        ("ask", "demo:expense", "I want to submit an expense", "--assert", "contains:expense",
         "--assert", '{"type": "regex", "value": "exp[a-z]+"}'),
        ("ask", "demo:expense", "hi", "--assert", "contians:x"),
        ("ask", "openai:gpt-4o-mini", "hi"),
    )  # fmt: skip
    assert ok.code == 0, ok.err
    assert "user> I want to submit an expense" in ok.out and "✓ contains" in ok.out
    assert bad_spec.code == 2 and "unknown assertion" in bad_spec.err
    assert no_key.code == 2 and "OPENAI_API_KEY" in no_key.err and "Traceback" not in no_key.err


def test_usage_errors_exit_2_with_a_message(tmp_path):
    finance, expense = str(EXAMPLES / "finance"), str(EXAMPLES / "expense")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    cases = {
        ("run", "-i", expense, "-n", "demo:expense", "--runs", "0"): "--runs: must be at least 1",
        ("run", "-i", expense, "-n", "demo:expense", "--runs", "-1"): "--runs: must be at least 1",
        ("run", "-i", expense, "-n", "demo:expense", "--parallel", "0"): "--parallel: must be",
        ("run", "-i", expense, "-n", "demo:expense", "--parallel", "-3"): "--parallel: must be",
        ("run", "-i", expense, "-n", "demo:expense", "--timeout", "abc"): "not a duration",
        ("run", "-i", expense, "-n", "demo:expense", "--run", "zzz"): "no test cases match",
        ("run", "-i", expense, "-n", "demo:expense", "-o", "r.csv"): "supported suffixes",
        ("run", "-i", "Hello"): "pass one with -n AGENT",
        ("run", "-i", expense): "pass one with -n AGENT",
        ("run", "-i", "Hello", "-n", "gpt-4o-mini"): "Did you mean 'openai:gpt-4o-mini'?",
        ("run", "-i", expense, "-n", "no_such_module_x:agent"): "cannot import module",
        ("run", "-i", expense, "-n", "demo:nope"): "unknown demo agent",
        # the HoloDeck agent.yaml names openai/gpt-4o-mini: used without -n, and no key is set
        ("run", "-i", finance): "OPENAI_API_KEY",
        ("run", "-i", str(bad), "-n", "demo:expense"): f"{bad}:1:",
        ("run", "-i", "examples/not-there/", "-n", "demo:expense"): "no such file or folder",
        ("demo", "--runs", "0"): "--runs: must be at least 1",
        ("serve-demo", "--port", "99999"): "--port: must be 0..65535",
        ("report", str(tmp_path / "nothing.json"), "-o", "x.html", "--timeout", "x"): "--timeout",
        ("bogus",): "invalid choice",
    }
    for (args, message), done in zip(cases.items(), many(*cases), strict=True):
        assert done.code == 2, (args, done.code, done.err)
        assert message in done.err, (args, done.err)
        assert "Traceback" not in done.err, args


def test_convlab_yaml_names_the_agent_and_settings(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(EXAMPLES / "expense" / "expense.jsonl", suite)
    (suite / "convlab.yaml").write_text("agent: demo:expense\nruns: 2\ntimeout: 30s\n")
    (tmp_path / "convlab.yaml").write_text("agent: demo:expense\n")
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(EXAMPLES / "expense" / "expense.jsonl", broken)
    (broken / "convlab.yaml").write_text("agent: demo:expense\nruns: 0\n")
    run, flag_wins, quick, bad = many(
        ("run", "-i", str(suite), "--run", "greeting", "-o", str(tmp_path / "a.json")),
        ("run", "-i", str(suite), "--run", "greeting", "--runs", "1", "-o",
         str(tmp_path / "b.json")),
        ("run", "-i", "I want to submit an expense"),
        ("run", "-i", str(broken)),
        cwd=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.err
    assert len(json.loads((tmp_path / "a.json").read_text())["results"]) == 2  # runs: 2
    assert flag_wins.code == 0
    assert len(json.loads((tmp_path / "b.json").read_text())["results"]) == 1
    assert quick.code == 0 and "agent> Hello!" in quick.out
    assert bad.code == 2 and "convlab.yaml: runs: must be at least 1" in bad.err


def test_unexpected_exception_exits_3_with_a_traceback(tmp_path):
    """A user module whose import raises RuntimeError is not a usage error: exit 3."""
    (tmp_path / "boom.py").write_text("raise RuntimeError('boom at import')\n")
    done = cli(
        "run", "-i", str(EXAMPLES / "expense"), "-n", "boom:agent", cwd=tmp_path,
        PYTHONPATH=str(tmp_path),
    )  # fmt: skip
    assert done.code == 3, done.err
    assert "Traceback (most recent call last)" in done.err
    assert "RuntimeError: boom at import" in done.err and "exit code 3" in done.err


def test_demo_and_assertions_commands():
    demo, kinds = many(("demo", str(EXAMPLES)), ("assertions",))
    assert demo.code == 0, demo.out + demo.err
    assert "every example ended as expected" in demo.out
    assert "Pass rate" in demo.err  # progress and summaries go to stderr
    assert kinds.code == 0
    for kind in ("contains", "json_path", "check", "expected_tools", "python_test", "judge"):
        assert kind in kinds.out


@pytest.fixture
def demo_server() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = start("serve-demo", "--port", str(port))
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_serve_demo_answers_convlab_ask(demo_server):
    done = cli(
        "ask", "openai:demo:finance", "what is the net cash from operating activities in 2009?",
        "--assert", "contains:206588", OPENAI_BASE_URL=f"http://127.0.0.1:{demo_server}/v1",
    )  # fmt: skip
    assert done.code == 0, done.both
    assert "206588" in done.out


KEY = "sk-test-Zq8rVw3LxN5tKp2Hd7Yc"
PASSWORD = "pw-Hj4Ks9Lm2Xq7"


def test_no_secret_in_any_cli_output(tmp_path, demo_server):
    """An OPENAI_API_KEY value and a URL password (also base64, as in a Basic header) appear
    in no stdout, stderr or written file of any command and any output format."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = closed.getsockname()[1]
    closed.close()
    live = f"http://alice:{PASSWORD}@127.0.0.1:{demo_server}/v1"
    down = f"http://alice:{PASSWORD}@127.0.0.1:{dead}"
    expense = str(EXAMPLES / "expense")
    some = "greeting|policy-limit|dynamic-receipt"  # passes, a failure, a dynamic failure
    with_key = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"http://127.0.0.1:{demo_server}/v1"}
    with_password = {"OPENAI_BASE_URL": live}  # a Basic header from the URL, no key
    outs = [tmp_path / f"r{suffix}" for suffix in (".json", ".jsonl", ".md", ".html", ".xml")]
    commands: list[tuple[tuple[str, ...], dict[str, str]]] = [
        (("run", "-i", expense, "-n", "openai:demo:expense", "--run", some, "-o", str(out),
          "--store", str(tmp_path / f"store{n}.jsonl"), "-v"), with_key if n % 2 else
         with_password)
        for n, out in enumerate(outs)
    ]  # fmt: skip
    commands += [
        (("run", "-i", expense, "-n", f"{down}/chat", "--run", "greeting", "-o",
          str(tmp_path / "down.json")), with_key),
        (("run", "-i", "hello", "-n", f"{down}/chat"), with_key),
        (("ask", "openai:demo:expense", "hello", "--assert", "contains:Hello"), with_password),
        (("ask", "openai:demo:expense", "hello", "--assert", "contains:Hello"), with_key),
        (("ask", f"{down}/chat", "hello"), with_key),
    ]  # fmt: skip
    procs = [start(*args, cwd=tmp_path, **env) for args, env in commands]
    done = [finish(p) for p in procs]
    assert [d.code for d in done[: len(outs)]] == [1] * len(outs), done[0].err
    assert done[-1].code == 1 and "could not connect" in done[-1].err  # the error is shown
    assert done[-2].code == 0 and done[-3].code == 0, done[-3].both
    secrets = [
        KEY,
        PASSWORD,
        base64.b64encode(f"alice:{PASSWORD}".encode()).decode(),
        base64.b64encode(PASSWORD.encode()).decode(),
    ]
    texts = {f"command {n}": d.both for n, d in enumerate(done)}
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} >= {".json", ".jsonl", ".md", ".html", ".xml"}
    texts |= {str(p): p.read_text(errors="replace") for p in files}
    for where, text in texts.items():
        for secret in secrets:
            assert secret not in text, f"secret leaked in {where}"
    assert "alice@127.0.0.1" in "".join(texts.values())  # the URL is shown without the password


HOSTILE = (
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]0;pwned\x07"  # window title, ended by BEL
    "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"  # an OSC 8 hyperlink
    " nul\x00 bs\x08 bel\x07 c1\x9b31m done"
)


def test_ask_and_a_quick_run_never_print_an_agents_terminal_escapes(tmp_path: Path) -> None:
    """`convlab ask` (and `convlab run "message"`) print the reply and the agent's error as
    `convlab run` does: every control character shown as `\\xNN`, none sent raw."""
    (tmp_path / "hostile.py").write_text(
        "from convlab.errors import AgentError\n"
        f"TEXT = {HOSTILE!r}\n"
        "def reply(messages):\n    return TEXT\n"
        "def fail(messages):\n    raise AgentError('failed: ' + TEXT)\n"
    )
    env = {"PYTHONPATH": str(tmp_path)}
    procs = [
        start("ask", "hostile:reply", "hi", cwd=tmp_path, **env),
        start("ask", "hostile:fail", "hi", cwd=tmp_path, **env),
        start("run", "-i", "hi", "-n", "hostile:reply", cwd=tmp_path, **env),
        start("run", "-i", "hi", "-n", "hostile:fail", cwd=tmp_path, **env),
    ]
    for proc in procs:
        done = finish(proc)
        assert done.code == 1 or "done" in done.out, done.both
        assert "done" in done.both  # the text is shown...
        assert re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", done.both) is None, done.both
        assert "\\x1b]8;;http://evil.example" in done.both  # ...with its controls visible


def test_an_output_that_cannot_be_written_is_a_clean_message_naming_it(tmp_path):
    """A path through a file, or a file-size limit (a full disk shows the same way): exit 2,
    the path and the reason, no traceback, no half-written file."""
    import resource

    (tmp_path / "afile").write_text("x")
    through = cli("run", "-i", str(EXAMPLES / "expense"), "-n", "demo:expense",
                  "-o", str(tmp_path / "afile" / "rep.json"))  # fmt: skip
    assert through.code == 2 and "Traceback" not in through.err
    assert f"{tmp_path / 'afile'}: a file, not a folder" in through.err

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.Popen(
        [sys.executable, "-m", "convlab.cli", "run", "-i", str(EXAMPLES / "expense"), "-n",
         "demo:expense", "-o", str(tmp_path / "big.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
        preexec_fn=limited,
    )  # fmt: skip
    done = finish(proc)
    assert done.code == 2 and "Traceback" not in done.err
    assert f"{tmp_path / 'big.json'}: File too large" in done.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # no .tmp left behind


def test_run_never_writes_its_results_over_the_suite_it_runs(tmp_path):
    victim = tmp_path / "victim.jsonl"
    shutil.copy(EXAMPLES / "expense" / "expense.jsonl", victim)
    folder = tmp_path / "folder"
    shutil.copytree(EXAMPLES / "expense", folder, ignore=shutil.ignore_patterns("output-*"))
    inside = folder / "expense.jsonl"
    before = victim.read_bytes(), inside.read_bytes()
    same, in_folder = many(
        ("run", "-i", str(victim), "-n", "demo:expense", "-o", str(victim)),
        ("run", "-i", str(folder), "-n", "demo:expense", "-o", str(inside)),
    )
    for done, path in ((same, victim), (in_folder, inside)):
        assert done.code == 2, done.both
        assert f"-o {path}: is the suite being run" in done.err and "Traceback" not in done.err
    assert (victim.read_bytes(), inside.read_bytes()) == before


def test_a_reader_that_stops_reading_gets_no_broken_pipe_message(tmp_path: Path) -> None:
    # `convlab assertions | head -5`: the reader leaves before convlab writes; stdout is a
    # pipe whose reading end is closed before the command starts writing
    commands = [
        ("assertions",),
        ("validate", str(EXAMPLES / "expense")),
        ("ask", "demo:expense", "hello"),
        ("run", "-i", str(EXAMPLES / "expense"), "-n", "demo:expense", "--dry-run"),
    ]
    procs = []
    for command in commands:
        read_end, write_end = os.pipe()
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "convlab.cli", *command],
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
                env=_env(CONVLAB_HOME=str(tmp_path)),
            )
        )
        os.close(write_end)
        os.close(read_end)
    for command, proc in zip(commands, procs, strict=True):
        _, err = proc.communicate(timeout=180)
        assert err == "", (command, err)
        assert proc.returncode == 141, command  # what a shell gives a command SIGPIPE stopped
