"""The codebase stays lint-clean, type-clean and made of modules a person can read."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> list[str]:
    """Run the gate with the interpreter running the tests, installed or not on PATH."""
    if importlib.util.find_spec(name) is None:
        pytest.fail(
            f"{name} is not installed for {sys.executable}: pip install -e '.[test]'",
            pytrace=False,
        )
    return [sys.executable, "-m", name]


def test_ruff_is_clean():
    out = subprocess.run([*_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]


@pytest.mark.slow
def test_mypy_strict_is_clean():
    out = subprocess.run(_tool("mypy"), cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]


def test_no_module_is_over_500_lines():
    big = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "convlab").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not big, big


def test_a_missing_gate_tool_fails_with_the_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match=r"pip install -e '\.\[test\]'"):
        _tool("ruff")


def test_what_following_the_readme_leaves_behind_is_git_ignored():
    """Every file the README's commands write (`-o`, `--store`, `.save(...)` in its code
    blocks and its inline `convlab ...` commands), and what Jupyter adds beside a notebook,
    stays out of `git status`."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = "\n".join(re.findall(r"```[a-z]*\n(.*?)```", readme, re.DOTALL))
    commands += "\n" + "\n".join(re.findall(r"`(convlab [^`]+)`", readme))
    written = set(re.findall(r"(?:-o|--store) ([\w.-]+\.\w+)\b", commands))
    written |= set(re.findall(r'save\("([\w.-]+)"\)', commands))
    assert {"report.html", "results.json", "run.jsonl"} <= written
    paths = [
        *sorted(written),
        "notebooks/report.html",  # run.save(...) or convlab report beside the notebooks
        "notebooks/report.ipynb",
        "notebooks/report.run.json",
        "notebooks/.ipynb_checkpoints/quickstart-checkpoint.ipynb",
        "examples/expense/output-20260101120000.jsonl",  # a run without -o
    ]
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode in (0, 1), proc.stderr
    kept = [line.split("\t")[-1] for line in proc.stdout.splitlines() if line.startswith("::")]
    assert kept == [], f"not git-ignored: {kept}"


def test_the_readme_and_serve_demo_help_name_every_demo_model():
    from convlab.agents.demos import names

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    served = readme[readme.index("**The demo server.**") :].split("\n\n", 1)[0]
    helped = subprocess.run(
        [sys.executable, "-m", "convlab.cli", "serve-demo", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    for name in names():
        assert f"`demo:{name}`" in served, name
        assert f"demo:{name}" in helped, name


def test_the_readme_describes_prompt_iteration_as_the_notebook_runs_it():
    import json

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = readme[readme.index("`prompt_iteration` (") :].split("),", 1)[0]
    nb = json.loads((ROOT / "notebooks" / "prompt_iteration.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    prompts = code[code.index("prompts = {") :].split("}", 1)[0]
    assert "4 system prompts x 2 models" in said
    assert prompts.count('": BASE') == 4 and '["expense", "expense_lite"]' in code
    for shown in ("leaderboard", "history", "compare"):
        assert shown in said and shown in code, shown
