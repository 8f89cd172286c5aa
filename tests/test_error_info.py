"""A bug in the user's own code is shown with its file and line: when an agent, a simulator, a
hook, an evaluator or a judge raises, the result keeps the exception's type and message, the
innermost frame of the user's code and a short traceback without convlab's frames; `run.df`
(`error_location`), the live tree, the card, the console, the reports and `ask`'s error card
show them. `ask` never raises for an agent's bug unless `raise_errors=True`.

The buggy code lives in a real file, tests/buggy_agent.py, each fault on a line marked `# BUG`.
"""

from __future__ import annotations

import io
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import buggy_agent as bug
import pytest

import convlab as cl
from convlab.model.records import ErrorInfo
from convlab.model.suite import Checkpoint, SimulatorSpec
from convlab.notebook._cards import run_card
from convlab.notebook.progress import LiveTree
from convlab.report.console import ConsoleProgress

BUGGY = Path(bug.__file__).resolve()
CONVLAB = Path(cl.__file__).resolve().parent


def where(function: Any) -> str:
    """`buggy_agent.py:13 in reply`: what `error_location` says for `function`'s bug."""
    return f"buggy_agent.py:{bug.line_of(function)} in {function.__name__}"


def standard(case_id: str = "parcel", **kw: Any) -> cl.Case:
    return cl.Case(id=case_id, input=[cl.Message(content="where is my parcel?")], **kw)


def suite(*cases: cl.Case) -> cl.Suite:
    return cl.Suite(id="s", cases=list(cases))


def frames(text: str) -> list[str]:
    """The files a formatted traceback names."""
    return [line.split('"')[1] for line in text.splitlines() if line.startswith('  File "')]


# ---------------------------------------------------------------- the function agent


@pytest.fixture(scope="module")
def buggy_run() -> cl.Run:
    return cl.run(suite(standard()), bug.reply, progress=False)


def test_run_df_names_the_file_and_line_of_the_agents_bug(buggy_run: cl.Run) -> None:
    row = buggy_run.df.iloc[0]
    assert row["status"] == "error" and row["blame"] == "agent"
    assert "AttributeError: 'NoneType' object has no attribute 'group'" in row["error"]
    assert row["error_location"] == where(bug.reply)


def test_the_result_keeps_type_message_frame_and_a_short_traceback(buggy_run: cl.Run) -> None:
    info = buggy_run.results[0].error_info
    assert info is not None
    assert (info.type, info.message) == (
        "AttributeError",
        "'NoneType' object has no attribute 'group'",
    )
    assert (Path(info.file or "").resolve(), info.line, info.function) == (
        BUGGY,
        bug.line_of(bug.reply),
        "reply",
    )
    # the user's frame and its line are there; convlab's and asyncio's frames are not
    assert frames(info.traceback) == [str(BUGGY)]
    assert "re.match(" in info.traceback
    assert info.traceback.rstrip().endswith(
        "AttributeError: 'NoneType' object has no attribute 'group'"
    )
    assert buggy_run.results[0].turns[0].error_info == info  # the turn that raised says it too


def test_the_error_survives_saving_and_loading(buggy_run: cl.Run, tmp_path: Path) -> None:
    for suffix in (".json", ".jsonl"):
        back = cl.load_run(buggy_run.save(tmp_path / f"run{suffix}"))
        assert back.results[0].error_info == buggy_run.results[0].error_info
        assert back.df.iloc[0]["error_location"] == where(bug.reply)


def test_a_result_without_error_info_still_loads(buggy_run: cl.Run) -> None:
    """A record saved before the field existed (or by hand) reads back with none."""
    data = buggy_run.results[0].to_dict()
    del data["error_info"]
    old = cl.CaseResult.from_dict(data)
    assert old.error_info is None and old.error == buggy_run.results[0].error


def test_the_card_shows_where_the_agent_raised(buggy_run: cl.Run) -> None:
    text, html = run_card(buggy_run)  # the card's "why" of the worst cases
    assert f"at <code>{where(bug.reply)}</code>" in html
    assert f"(at {where(bug.reply)})" in text
    shown = buggy_run._repr_mimebundle_()  # what the cell shows: the card and the table
    assert f"at <code>{where(bug.reply)}</code>" in shown["text/html"]


def test_the_live_tree_shows_the_location_and_the_traceback() -> None:
    tree = LiveTree()
    run = cl.run(suite(standard()), bug.reply, progress=tree)
    body = tree.body.value
    place = f"buggy_agent.py:{bug.line_of(bug.reply)}"
    assert f">{place}</code> in <code>reply</code>" in body
    assert "<summary class='cl-muted'>traceback</summary>" in body
    assert "re.match(" in body  # the user's line, in the folded traceback
    final = tree.final_bundle(run)["text/html"]
    assert place in final and "re.match(" in final  # the static summary keeps them


def test_the_console_prints_the_location_beside_the_error() -> None:
    out = io.StringIO()
    cl.run(suite(standard()), bug.reply, progress=ConsoleProgress(out, color=False))
    line = next(x for x in out.getvalue().splitlines() if "AttributeError" in x)
    assert line.endswith(f"(at {where(bug.reply)})")


def test_reports_name_the_location(buggy_run: cl.Run, tmp_path: Path) -> None:
    md = buggy_run.save(tmp_path / "r.md").read_text()
    assert f"at `{where(bug.reply)}`" in md
    page = buggy_run.save(tmp_path / "r.html").read_text()
    place = f"buggy_agent.py:{bug.line_of(bug.reply)}"
    assert f">{place}</code> in <code>reply</code>" in page and "re.match(" in page
    xml = buggy_run.save(tmp_path / "r.xml").read_text()
    assert f"raised at: {where(bug.reply)}" in xml


def test_every_view_escapes_the_exceptions_text(tmp_path: Path) -> None:
    tree = LiveTree()
    run = cl.run(suite(standard()), bug.hostile, progress=tree)
    assert run.df.iloc[0]["error_location"] == where(bug.hostile)
    answer = cl.ask(bug.hostile, "hi")
    views = {
        "tree": tree.body.value,
        "card": run._repr_mimebundle_()["text/html"],
        "report": run.save(tmp_path / "r.html").read_text(),
        "ask": answer._repr_html_(),
    }
    for name, html in views.items():
        assert "<img" not in html and "<script>alert" not in html, name
        assert "&lt;img src=x onerror=alert(1)&gt;" in html, name


# ---------------------------------------------------------------- ask


def test_ask_returns_an_error_answer_and_does_not_raise() -> None:
    answer = cl.ask(bug.reply, "where is my parcel?", {"type": "contains", "value": "order"})
    assert answer.status == "error" and not answer.passed
    assert answer.error == "AttributeError: 'NoneType' object has no attribute 'group'"
    assert answer.error_info is not None and answer.error_info.location == where(bug.reply)
    html = answer._repr_html_()
    assert "ERROR" in html
    assert f">buggy_agent.py:{bug.line_of(bug.reply)}</code> in <code>reply</code>" in html
    assert "Traceback (most recent call last)" in html and "re.match(" in html
    assert "raise_errors=True" in html  # how to get the exception itself
    text = str(answer)
    assert text.startswith("ERROR") and f"at {where(bug.reply)}" in text
    assert cl.Answer.from_json(answer.to_json()) == answer


def test_ask_with_raise_errors_raises_the_original_exception_from_the_users_frame() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'group'") as raised:
        cl.ask(bug.reply, "where is my parcel?", raise_errors=True)
    stack = traceback.extract_tb(raised.value.__traceback__)
    innermost = stack[-1]
    assert Path(innermost.filename).resolve() == BUGGY and innermost.name == "reply"
    # what a debugger's post-mortem opens is the user's frame; between the call and it, only
    # ask() itself: no engine, thread or event loop frames
    inner = [f for f in stack if Path(f.filename).resolve().is_relative_to(CONVLAB)]
    assert [f.name for f in inner] == ["ask"]


def test_in_ipython_raise_errors_shows_and_debugs_only_the_users_frames(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A notebook prints the traceback from the cell's call straight to the agent's line, and
    `%debug` opens there and walks up to the cell without stopping in convlab's ask()."""
    from IPython.core.debugger import Pdb
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.user_ns.update(cl=cl, bug=bug)
        capsys.readouterr()
        result = shell.run_cell('cl.ask(bug.reply, "where is my parcel?", raise_errors=True)')
        printed = capsys.readouterr().out
        assert isinstance(result.error_in_exec, AttributeError)
        assert "has no attribute 'group'" in printed and "buggy_agent.py" in printed
        assert "api.py" not in printed and "convlab" not in printed.replace("cl.ask", "")
        tb = sys.last_traceback
        debugger = Pdb()
        stack, _ = debugger.get_stack(None, tb)
        hidden = debugger.hidden_frames(stack)
        walked = [f.f_code.co_filename for (f, _), h in zip(stack, hidden, strict=True) if not h]
        assert Path(walked[-1]).resolve() == BUGGY  # where %debug opens
        assert not any(Path(f).resolve().is_relative_to(CONVLAB) for f in walked)
    finally:
        InteractiveShell.clear_instance()


def test_ask_still_raises_for_its_own_usage_errors() -> None:
    with pytest.raises(cl.SuiteError):
        cl.ask(bug.reply, "hi", {"type": "contians", "value": "x"})


def test_an_agent_defined_in_a_notebook_cell_is_located_in_its_cell() -> None:
    """IPython compiles a cell under a file name of its own (`<ipython-input-...>`, or a
    `/tmp/ipykernel_.../N.py` file in a kernel): the location shows what Python gives."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        cell = "import re\n\ndef cell_agent(messages):\n    return re.match('x', 'y').group()\n"
        assert shell.run_cell(cell).success
        agent = shell.user_ns["cell_agent"]
        answer = cl.ask(agent, "hi")
    finally:
        InteractiveShell.clear_instance()
    filename = agent.__code__.co_filename
    info = answer.error_info
    assert info is not None and info.file == filename and info.line == 4
    assert info.location == f"{os.path.basename(filename)}:4 in cell_agent"
    assert "re.match('x', 'y').group()" in info.traceback  # IPython keeps the cell's lines


# ---------------------------------------------------------------- around the agent


def test_a_raising_simulator_is_located() -> None:
    case = cl.Case(
        id="dyn",
        mode="dynamic",
        simulator=SimulatorSpec(persona="a customer", goal="file a complaint"),
        checkpoints=[Checkpoint(id="done", assertion={"kind": "contains", "value": "x"})],
    )
    run = cl.run(suite(case), lambda m: "hello", simulator=bug.simulator, progress=False)
    row = run.df.iloc[0]
    assert (row["status"], row["blame"]) == ("error", "simulator")
    assert row["error_location"] == where(bug.simulator)
    assert "KeyError" in row["error"]


def test_a_raising_before_hook_is_located() -> None:
    case = standard(hooks={"before": "buggy_agent:before_hook"})
    run = cl.run(suite(case), lambda m: "hello", progress=False)
    row = run.df.iloc[0]
    assert (row["status"], row["blame"]) == ("error", "hook")
    assert row["error_location"] == where(bug.before_hook)


def test_a_raising_run_before_hook_is_located_on_every_instance_and_the_run() -> None:
    run = cl.run(suite(standard("a"), standard("b")), lambda m: "hi", before=bug.before_hook,
                 progress=False)  # fmt: skip
    assert list(run.df["error_location"]) == [where(bug.before_hook)] * 2
    assert run.error is not None and run.error.endswith(f"(at {where(bug.before_hook)})")


def test_a_raising_evaluator_is_located(register_evaluator: Any) -> None:
    register_evaluator("buggy_threshold")(bug.evaluator)
    case = standard(assertions=[{"kind": "custom", "evaluator": "buggy_threshold"}])
    run = cl.run(suite(case), lambda m: "hello", progress=False)
    result = run.results[0]
    check = result.turns[0].assertions[0]
    assert check.status == "error" and check.error_info is not None
    assert check.error_info.location == where(bug.evaluator)
    assert run.df.iloc[0]["error_location"] == where(bug.evaluator)


def test_a_raising_judge_is_located() -> None:
    case = standard(assertions=[{"kind": "judge", "question": "Is it polite?"}])
    run = cl.run(suite(case), lambda m: "hello", judge=bug.judge, progress=False)
    row = run.df.iloc[0]
    assert (row["status"], row["blame"]) == ("error", "judge")
    assert row["error_location"] == where(bug.judge)


def test_an_error_outside_the_users_code_has_no_location() -> None:
    """An HTTP agent that cannot connect: the type and message, no file, no traceback."""
    agent = cl.agents.http("http://127.0.0.1:9/chat")
    answer = cl.ask(agent, "hi")
    assert answer.status == "error"
    assert answer.error_info is not None and answer.error_info.file is None
    assert answer.error_info.location == "" and answer.error_info.traceback == ""


def test_the_location_of_a_record_reads_as_file_line_function() -> None:
    info = ErrorInfo(type="E", file="/a/b/my_agent.py", line=12, function="reply")
    assert (info.place, info.location) == ("my_agent.py:12", "my_agent.py:12 in reply")
    assert ErrorInfo(type="E").location == ""
    assert ErrorInfo(type="E", file="<ipython-input-3-abc>", line=2).location == (
        "<ipython-input-3-abc>:2"
    )


def test_the_cli_prints_the_location_beside_the_agents_error(tmp_path: Path) -> None:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(BUGGY.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "convlab", "ask", "buggy_agent:reply", "hi"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"(at {where(bug.reply)})" in done.stderr
    package = str(Path(cl.__file__).resolve().parent)  # no frame of convlab's own code
    assert "Traceback" in done.stdout and package not in done.stdout


# ---------------------------------------------------------------- big and broken errors


def test_a_20_mb_error_is_cut_in_the_result_the_store_and_the_report(tmp_path: Path) -> None:
    from convlab.model.tracebacks import ERROR_BYTES

    store = tmp_path / "run.jsonl"
    run = cl.run(suite(standard("a"), standard("b")), bug.huge, store=store, progress=False)
    for result in run.results:
        assert result.error is not None and result.error_info is not None
        assert result.error.endswith("… cut, 20,000,000 bytes")
        assert result.error.startswith("agent error at turn 1: ValueError: xxx")
        assert len(result.error.encode()) < ERROR_BYTES
        assert result.error_info.location == where(bug.huge)  # the place is kept
        assert len(result.error_info.traceback.encode()) < ERROR_BYTES + 40
        assert "… cut, " in result.error_info.traceback
    assert store.stat().st_size < 200_000  # was 128 MB for two such cases
    html = Path(run.save(tmp_path / "run.html")).stat().st_size
    plain = cl.run(suite(standard("a"), standard("b")), lambda m: "ok", progress=False)
    baseline = Path(plain.save(tmp_path / "plain.html")).stat().st_size  # the page's own size
    assert html - baseline < 300_000  # the two errors add little (they added 65 MB)
    answer = cl.ask(bug.huge, "where is my parcel?")  # what `convlab ask` prints
    assert len(str(answer)) < 2 * ERROR_BYTES and answer.error is not None  # was 60 MB
    assert answer.error.endswith("… cut, 20,000,000 bytes")


def test_a_chain_of_400_raise_from_keeps_the_innermost_and_says_how_many_were_left_out() -> None:
    from convlab.model.tracebacks import CHAIN_DEPTH

    run = cl.run(suite(standard()), bug.chained, progress=False)
    info = run.results[0].error_info
    assert info is not None and info.location == where(bug.chained)
    assert info.traceback.count("The above exception was the direct cause") == CHAIN_DEPTH
    assert f"… {400 - CHAIN_DEPTH} earlier chained exceptions left out" in info.traceback
    assert info.traceback.rstrip().endswith("RuntimeError: step 399")
    assert len(info.traceback) < 12_000  # was 154 KB


@pytest.mark.parametrize(
    ("function", "name"), [(bug.unprintable, "StrRaises"), (bug.not_text, "StrNotText")]
)
def test_an_exception_that_cannot_say_what_it_is_keeps_its_type_and_place(
    function: Any, name: str
) -> None:
    run = cl.run(suite(standard()), function, progress=False)
    [result] = run.results
    assert result.error is not None and result.error_info is not None
    assert result.error.startswith(f"agent error at turn 1: {name}: <unprintable {name}")
    assert result.error_info.type == name
    assert result.error_info.location == where(function)
    answer = cl.ask(function, "hi")
    assert answer.error_info is not None and answer.error_info.type == name
