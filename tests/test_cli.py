"""The CLI end to end, as a user types it (in-process main() and one real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from convlab.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_validate_ok_prints_a_count(capsys):
    assert main(["validate", str(EXAMPLES)]) == 0
    assert "valid: 30 case(s)" in capsys.readouterr().out


def test_validate_lists_every_problem_with_its_location(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": "x"}\n{"id": \n{"input": "no id"}\n')
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) >= 2 and out[0].startswith(f"{bad}:2: ")
    assert any(line.startswith(f"{bad}:3: ") for line in out)


def test_run_exit_codes_and_json_output(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["run", "-i", str(EXAMPLES / "finance"), "-n", "demo:finance", "-o", str(out)])
    assert code == 1  # the finance example has a case that fails on purpose
    data = json.loads(out.read_text())
    statuses = {r["case_id"]: r["status"] for r in data["results"]}
    assert statuses["percentage-as-text"] == "failed" and statuses["convfinqa-0"] == "passed"
    code = main(
        ["run", "-i", str(EXAMPLES / "finance"), "-n", "demo:finance", "--run", "^convfinqa-0$"]
    )
    assert code == 0


def test_run_usage_errors_exit_2(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "-i",
                str(EXAMPLES / "finance"),
                "-n",
                "demo:finance",
                "--run",
                "nothing-matches",
            ]
        )
        == 2
    )
    assert "no test cases match" in capsys.readouterr().err
    assert main(["run", "-i", str(EXAMPLES / "finance")]) == 2
    assert "-n AGENT" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    assert main(["run", "-i", str(bad), "-n", "demo:expense"]) == 2
    assert f"{bad}:1:" in capsys.readouterr().err


def test_dry_run_lists_cases(capsys):
    assert main(["run", "-i", str(EXAMPLES / "expense"), "--dry-run"]) == 0
    assert "expense-turn1" in capsys.readouterr().out


def test_quick_message(capsys):
    assert main(["run", "-i", "I want to submit an expense", "-n", "demo:expense"]) == 0
    assert "agent> Hello!" in capsys.readouterr().out


def test_assertions_lists_every_kind(capsys):
    assert main(["assertions"]) == 0
    out = capsys.readouterr().out
    for kind in ("contains", "json_path", "check", "expected_tools", "python_test", "judge"):
        assert kind in out


def test_demo_command_in_a_real_process():
    proc = subprocess.run(
        [sys.executable, "-m", "convlab", "demo", str(EXAMPLES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every example ended as expected" in proc.stdout
    assert "Pass rate" in proc.stderr  # progress and summaries go to stderr


def test_serve_demo_command_answers_an_openai_agent():
    import socket
    import time

    import convlab as cl

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "convlab", "serve-demo", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        agent = cl.agents.openai(
            "demo:finance", base_url=f"http://127.0.0.1:{port}/v1", api_key="x"
        )
        answer = cl.ask(agent, "what is the net cash from operating activities in 2009?")
        assert "206588" in answer.text
    finally:
        proc.terminate()
        proc.wait(10)
