"""`%load_ext convlab`: `%%ask` and `%convlab` in a real IPython shell, as a user types them."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

import convlab as cl
from convlab.notebook.magics import parse_assertion

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPENSE = shlex.quote(str(EXAMPLES / "expense"))


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InteractiveShell]:
    """One shell for the module (no history file, a private IPYTHONDIR), then cleared."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IPYTHONDIR", str(tmp_path_factory.mktemp("ipython")))
        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        sh = InteractiveShell.instance(config=config)
        sh.run_line_magic("load_ext", "convlab")
        yield sh
        InteractiveShell.clear_instance()


def ask(shell: InteractiveShell, line: str, cell: str) -> Any:
    return shell.run_cell_magic("ask", line, cell)


# ---------------------------------------------------------------- %%ask


def test_ask_returns_the_answer_rendered_as_a_transcript(shell):
    a = ask(shell, "demo:expense --assert contains:expense", "I want to submit an expense\n")
    assert isinstance(a, cl.Answer) and a.passed
    assert a.messages[-1].content == "I want to submit an expense"  # the body, stripped
    bundle = a._repr_mimebundle_()
    assert bundle["text/plain"].startswith("PASS · demo:expense · 1 of 1 assertion passed")
    assert "✓ PASS" in bundle["text/html"] and "output contains" in bundle["text/html"]


def test_ask_cell_leaves_the_answer_in_underscore(shell):
    result = shell.run_cell(
        "%%ask demo:expense --assert tool:create_expense\nSubmit a travel expense for $3500",
        store_history=True,
    )
    assert result.success and isinstance(result.result, cl.Answer)
    assert shell.user_ns["_"] is result.result and result.result.passed


def test_ask_shorthands_keep_backslashes_and_dollars(shell):
    line = (
        r"demo:expense --assert regex:\$\d+ --assert 'equals:nope' "
        r"""--assert '{"type": "tool_called", "value": "create_expense"}' """
        "--assert '{type: not_contains, value: error}' --assert json"
    )
    a = ask(shell, line, "Submit a travel expense for $3500")
    assert [(r.kind, r.status) for r in a.results] == [
        ("regex", "passed"),
        ("equals", "failed"),
        ("tool_called", "passed"),
        ("not_contains", "passed"),
        ("type", "failed"),  # `json`: the reply is prose, not a JSON object
    ]
    assert r"\$\d+" in a.results[0].message
    text = repr(a)
    assert "✗ equals" in text and 'expected: "nope"' in text


def test_parse_assertion_forms():
    def kinds(text: str, ns: dict[str, Any] | None = None) -> list[tuple[str, Any]]:
        return [(s.kind, s.model_dump(exclude_defaults=True)) for s in parse_assertion(text, ns)]

    assert kinds("json:total=42")[0][1]["value"] == 42
    assert kinds("json:items[0].name=pen")[0][1] == {
        "kind": "json_path",
        "path": "items[0].name",
        "value": "pen",
    }
    assert kinds("json:array")[0][1]["value"] == "array"
    assert kinds("judge:Is it polite?")[0][1]["question"] == "Is it polite?"
    assert kinds("tool_result:create_expense")[0][0] == "tool_result"
    mixed = parse_assertion('[{"type": "contains", "value": "a"}, "not_contains:b", "json"]')
    assert [s.kind for s in mixed] == ["contains", "not_contains", "type"]
    assert [
        k
        for k, _ in kinds(
            '[{"type": "contains", "value": "a"}, {"kind": "judge", "rubric": "clear"}]'
        )
    ] == ["contains", "judge"]
    assert kinds("check_x", {"check_x": {"type": "equals", "value": "y"}})[0][0] == "equals"
    with pytest.raises(ValueError, match="Did you mean 'contains'"):
        parse_assertion("contians:x")
    with pytest.raises(ValueError, match="needs a value"):
        parse_assertion("regex")
    with pytest.raises(ValueError, match="PATH=VALUE"):
        parse_assertion("json:total")


def test_ask_resolves_notebook_variables(shell):
    seen: list[Any] = []

    def bot(messages: list[dict[str, Any]], ctx: Any) -> str:
        seen.append((messages, dict(ctx.world)))
        return "pong"

    shell.user_ns.update(
        bot=bot,
        agents=SimpleNamespace(bot=bot),
        earlier=[{"role": "user", "content": "ping?"}, {"role": "assistant", "content": "pong"}],
        polite=lambda m: "YES",
    )
    a = ask(shell, "bot --history earlier --world '{credits: 3}' --assert equals:pong", "ping")
    assert a.passed and a.agent.endswith("bot")
    assert [m["content"] for m in seen[0][0]] == ["ping?", "pong", "ping"]
    assert seen[0][1] == {"credits": 3}
    a = ask(
        shell,
        """agents.bot --history '[{"role": "user", "content": "hi"}]' """
        "--judge polite --assert 'judge:Is it polite?'",
        "ping",
    )
    assert a.passed and a.results[0].kind == "judge"


def test_ask_judge_assertion_without_judge_shows_the_error(shell):
    a = ask(shell, "demo:expense --assert 'judge:Is it polite?'", "hello")
    assert a.results[0].status == "error" and "no judge is configured" in repr(a)


@pytest.mark.parametrize(
    ("line", "cell", "message"),
    [
        ("", "hi", "needs an agent"),
        ("demo:expense", "   \n", "the cell is the message"),
        ("demo:expense --assert contians:x", "hi", "Did you mean 'contains'"),
        ("demo:expense --assert contains", "hi", "'contains' needs a value"),
        ('demo:expense --assert \'{"type": "contains", "valeu": 1}\'', "hi", "'valeu'"),
        ('demo:expense --assert \'{"type": "contains"\'', "hi", "neither JSON nor YAML"),
        ("demo:expense --assert 'unclosed", "hi", "no closing quotation"),
        ("demo:expense --bogus", "hi", "unrecognized arguments: --bogus"),
        ("demo:nope", "hi", "unknown demo agent 'nope'"),
        ("no_such_variable", "hi", "not a variable in this notebook either"),
        ("pkg_that_is_not_there:fn", "hi", "pkg_that_is_not_there"),
        ("demo:expense --world '[1, 2]'", "hi", "--world must be a dict"),
        ("demo:expense --history '{a: 1}'", "hi", "--history must be a list"),
        ("demo:expense --judge demo:nope", "hi", "judge 'demo:nope'"),
    ],
)
def test_ask_usage_errors_are_one_clear_message(shell, line, cell, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("[", r"\[")):
        ask(shell, line, cell)


def test_usage_error_prints_no_traceback(shell, capsys):
    result = shell.run_cell("%%ask demo:expense --assert contians:x\nhi")
    assert isinstance(result.error_in_exec, UsageError)
    err = capsys.readouterr().err
    assert "UsageError: --assert contians:x" in err and "Traceback" not in err


def test_ask_help_prints_usage(shell, capsys):
    assert ask(shell, "--help", " ") is None
    assert "%%ask AGENT [--assert SPEC]" in capsys.readouterr().out


# ---------------------------------------------------------------- %convlab


def test_convlab_run_returns_the_run_with_live_progress(shell, monkeypatch):
    calls: list[dict[str, Any]] = []
    real = cl.run

    def spy(*args: Any, **kwargs: Any) -> cl.Run:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(cl, "run", spy)
    run = shell.run_line_magic("convlab", f"run -i {EXPENSE} -n demo:expense --runs 2")
    assert isinstance(run, cl.Run)
    assert calls[0]["progress"] is None and calls[0]["runs"] == 2
    assert run.summary["total"] == 2 * run.summary["cases"] and run.summary["passed"] > 0
    bundle = run._repr_mimebundle_()
    assert "text/html" in (bundle[0] if isinstance(bundle, tuple) else bundle)


def test_convlab_run_options_agent_variable_filter_and_output(shell, tmp_path):
    shell.user_ns["greeter"] = lambda m: "Hello! I can help you submit an expense."
    out = tmp_path / "run.json"
    run = shell.run_line_magic(
        "convlab", f"run -i {EXPENSE} -n greeter --run greeting -o {shlex.quote(str(out))}"
    )
    assert [r.case_id for r in run.results] == ["expense-greeting"]
    assert cl.load_run(out).results[0].case_id == "expense-greeting"


def test_convlab_run_maps_yao_agent_ids_to_notebook_variables(shell, tmp_path):
    case = {"id": "c", "input": "Hi", "assert": {"type": "agent", "use": "agents:v"}}
    (tmp_path / "s.jsonl").write_text(json.dumps(case) + "\n")
    shell.user_ns["bot"] = lambda m: "Hello."
    shell.user_ns["curt"] = lambda m: '{"passed": false, "reason": "too curt"}'
    run = shell.run_line_magic("convlab", f"run -i {tmp_path} -n bot --judges agents:v=curt")
    (check,) = run.results[0].turns[0].assertions
    assert (check.status, check.message) == ("failed", "too curt")


def test_convlab_run_quick_message_returns_an_answer(shell):
    a = shell.run_line_magic("convlab", "run -i 'I want to submit an expense' -n demo:expense")
    assert isinstance(a, cl.Answer) and "expense" in a.text


def test_convlab_dry_run_lists_the_cases(shell):
    df = shell.run_line_magic("convlab", f"run -i {EXPENSE} --dry-run")
    assert isinstance(df, pd.DataFrame) and "expense-greeting" in set(df["case_id"])


def test_convlab_other_commands_show_their_output(shell, capsys, tmp_path):
    assert shell.run_line_magic("convlab", f"validate {shlex.quote(str(EXAMPLES))}") is None
    assert "valid: 30 case(s)" in capsys.readouterr().out
    assert shell.run_line_magic("convlab", "assertions") is None
    assert "contains" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": "x"}\n{"id": \n')
    assert shell.run_line_magic("convlab", f"validate {shlex.quote(str(bad))}") is None
    captured = capsys.readouterr()
    assert f"{bad}:2:" in captured.err and "exit code 2" in captured.err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "usage: %convlab {"),
        ("bogus", "invalid choice: 'bogus'"),
        ("run", "the following arguments are required: -i/--input"),
        (f"run -i {EXPENSE}", "-n AGENT"),
        ("run -i examples/not-there/", "no such file or folder"),
        (f"run -i {EXPENSE} -n demo:expense --timeout soon", "--timeout"),
        (f"run -i {EXPENSE} -n demo:expense --run nothing-matches", "no test cases match"),
        (f"run -i {EXPENSE} -n demo:nope", "unknown demo agent"),
        (f"run -i {EXPENSE} -n demo:expense --runs many", "invalid int value"),
    ],
)
def test_convlab_usage_errors(shell, line, message):
    with pytest.raises(UsageError, match=message.replace("{", r"\{")):
        shell.run_line_magic("convlab", line)


def test_convlab_invalid_suite_lists_its_problems(shell, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": "x", "assert": {"type": "contians", "value": 1}}\n')
    with pytest.raises(UsageError, match=r"bad.jsonl:1: .*Did you mean 'contains'"):
        shell.run_line_magic("convlab", f"run -i {shlex.quote(str(bad))} -n demo:expense")


def test_convlab_help_prints(shell, capsys):
    assert shell.run_line_magic("convlab", "--help") is None
    assert "usage: convlab" in capsys.readouterr().out


def test_import_convlab_loads_no_notebook_libraries():
    code = (
        "import sys, convlab, convlab.notebook.magics, convlab.notebook.transcript\n"
        "heavy = {'IPython', 'ipywidgets', 'plotly', 'itables'} & set(sys.modules)\n"
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_convlab_run_replays_from_an_empty_cache_without_a_live_call(shell, tmp_path):
    """`--cache replay --cache-dir EMPTY` must not call the agent: each case misses."""
    calls: list[str] = []

    def agent(messages: Any) -> str:
        calls.append(messages[-1]["content"])
        return "Hello! I can help you submit an expense."

    shell.user_ns["counted"] = cl.cached(agent)
    empty = tmp_path / "empty"
    empty.mkdir()
    run = shell.run_line_magic(
        "convlab", f"run -i {EXPENSE} -n counted --run greeting --cache replay --cache-dir {empty}"
    )
    assert calls == []
    assert run.settings["cache"]["mode"] == "replay" and run.settings["cache"]["missed"] == 1


# Every `convlab run` option but those that pick what runs and where results go, with a value
# that is not its default. A new option fails the test until it is listed here, and then it
# must reach the run from the magic.
RUN_FLAGS = {
    "runs": "--runs 3",
    "parallel": "--parallel 7",
    "timeout": "--timeout 9s",
    "fail_fast": "--fail-fast",
    "store": "--store results.jsonl",
    "resume": "--resume",
    "overwrite": "--overwrite",
    "simulator": "--simulator sim",
    "judge": "--judge curt",
    "judges": "--judges agents:v=curt",
    "before": "--before hooks:before",
    "after": "--after hooks:after",
    "adaptive": "--no-adaptive",
    "max_reply_bytes": "--max-reply-bytes 10",
    "allow_external_writes": "--allow-external-writes",
    "max_cases": "--max-cases 5",
    "cache": "--cache replay",
    "cache_dir": "--cache-dir recordings",
    "executor": "--executor ray",
    "ray_address": "--ray-address auto",
    "history": "--no-history",
    "history_keep": "--history-keep 3",
}


def test_every_convlab_run_option_reaches_the_run_from_the_magic(shell, monkeypatch):
    from convlab._cli_run import RUN_ONLY
    from convlab.cli import _parser

    sub = next(a for a in _parser()._actions if a.dest == "command")
    options = {a.dest for a in sub.choices["run"]._actions} - RUN_ONLY  # type: ignore[attr-defined]
    assert options == set(RUN_FLAGS)
    seen: list[dict[str, Any]] = []

    def spy(suite: Any, agent: Any, **kwargs: Any) -> None:
        called = {
            k: v if isinstance(v, int | str | bool | None) else repr(v) for k, v in kwargs.items()
        }
        seen.append(called | {"adaptive": agent.adaptive})

    monkeypatch.setattr(cl, "run", spy)
    shell.user_ns["sim"] = lambda m: "a user's reply"
    shell.user_ns["curt"] = lambda m: '{"passed": false, "reason": "too curt"}'
    line = f"run -i {EXPENSE} -n http://127.0.0.1:9/chat"
    shell.run_line_magic("convlab", line)
    baseline = seen.pop()
    dropped = []
    for flag in RUN_FLAGS.values():
        shell.run_line_magic("convlab", f"{line} {flag}")
        if seen.pop() == baseline:
            dropped.append(flag)
    assert dropped == []


def test_convlab_run_with_several_agents_returns_an_experiment(shell):
    line = f"run -i {EXPENSE} -n a=demo:expense -n demo:expense --run expense-greeting"
    exp = shell.run_line_magic("convlab", line)
    assert isinstance(exp, cl.Experiment)
    assert exp.variants == ["a", "demo:expense"]
    shell.user_ns["grid"] = {"x": "demo:expense", "y": lambda m: "no"}
    exp = shell.run_line_magic("convlab", f"run -i {EXPENSE} -n grid --experiment g --run turn1")
    assert exp.name == "g" and exp.variants == ["x", "y"]
    assert exp.leaderboard()["passed"].tolist() == [1, 0]
