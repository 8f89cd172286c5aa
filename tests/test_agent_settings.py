"""What an agent is made of travels with its run (`Run.agent_settings`): model, full system
prompt, params and tools for an OpenAI-compatible agent answered by a real server on
127.0.0.1, the function's place for a function agent; keys and header values never."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import convlab as cl
from convlab.agents.function import FunctionAgent
from convlab.agents.serve import DemoServer


def suite(tmp_path: Path) -> cl.Suite:
    f = tmp_path / "hi.jsonl"
    case = '{"id": "hi", "input": "hello", "assert": {"type": "contains", "value": "hello"}}'
    f.write_text(case + "\n")
    return cl.load(f)


def echo(messages):
    return f"echo: {messages[-1]['content']}"


def test_openai_agent_settings_are_kept_with_the_run_and_hide_the_key(tmp_path: Path) -> None:
    with DemoServer({"echo": echo}) as base:
        agent = cl.agents.openai(
            "echo",
            base_url=base,
            api_key="sk-very-secret-key",
            system="You are terse.\nNever mention sk-very-secret-key.",
            temperature=0.2,
            headers={"X-Org-Token": "org-token-1234"},
            extra={"note": "org-token-1234"},
        )
        run = cl.run(suite(tmp_path), agent, progress=False)
    assert run.summary["passed"] == 1
    got = run.agent_settings
    assert got["model"] == "echo"
    assert got["params"]["temperature"] == 0.2
    assert got["system"] == "You are terse.\nNever mention ***."
    assert got["params"]["extra"] == {"note": "***"}
    text = run.to_json()
    assert "sk-very-secret-key" not in text and "org-token-1234" not in text
    saved = tmp_path / "run.json"
    run.save(saved)
    assert "sk-very-secret-key" not in saved.read_text()
    assert cl.load_run(saved).agent_settings == got


def test_function_agent_settings_name_the_function_and_its_file(tmp_path: Path) -> None:
    run = cl.run(suite(tmp_path), echo, progress=False)
    assert run.agent_settings["function"].endswith(":echo")
    assert run.agent_settings["file"] == __file__


def test_a_failing_settings_override_does_not_stop_the_run(tmp_path: Path) -> None:
    class Odd(FunctionAgent):
        def settings(self) -> dict[str, Any]:
            raise KeyError("model")

    run = cl.run(suite(tmp_path), Odd(echo, name="odd"), progress=False)
    assert run.summary["passed"] == 1
    assert run.agent_settings == {"spec": "odd", "settings_error": "KeyError: 'model'"}


def test_a_short_dummy_key_leaves_prompt_model_and_spec_intact(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """`api_key="x"` (how local servers are called) masks nothing in free text: the prompt,
    the model and the spec read as written in the run, the history and the experiment's
    "what changed" (before, every letter x became `***`: "e***pense")."""
    monkeypatch.setenv("CONVLAB_HOME", str(tmp_path / "home"))
    system = "You are an expense assistant. Be exact."
    with DemoServer(latency_ms=1) as base:
        agents = {
            key: cl.agents.openai("expense", base_url=base, api_key=key, system=system + n)
            for n, key in (("", "x"), (" Be brief.", "EMPTY"), (" Be kind.", "sk-1"))
        }
        exp = cl.run(suite(tmp_path), agents, progress=False)
    for key, run in exp.runs.items():
        got = run.agent_settings
        assert got["model"] == "expense", key
        assert got["spec"] == "openai:expense", key
        assert got["system"].startswith("You are an expense assistant."), key
        assert "***" not in run.to_json(), key
    past = cl.history()
    assert set(past["model"]) == {"expense"}
    back = cl.load_run(int(past["id"].iloc[0]))
    assert back.agent_settings["system"].startswith("You are an expense assistant.")
    changes = exp.leaderboard().attrs["changes"]
    assert changes and "***" not in repr(changes)
    assert "***" not in cl.compare(exp.runs["x"], exp.runs["EMPTY"]).agent_changes.to_string()
