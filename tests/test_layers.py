"""Imports point one way, down the layers of pyproject.toml's import-linter contract:
import-linter checks every import, the ones inside functions included, against the layers
contract in pyproject.toml. The only upward imports are the named hooks listed there (model
objects that show themselves)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LINT = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=True))"


def test_the_layers_contract_is_kept() -> None:
    out = subprocess.run(
        [sys.executable, "-c", LINT], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "2 kept, 0 broken" in out.stdout


def _lint_with(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess[str]:
    """import-linter on a copy of the package where `module` imports `line` in a function."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "convlab", copy / "convlab")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    path = copy / "convlab" / module
    path.write_text(
        path.read_text(encoding="utf-8") + f"\n\ndef _sneaky() -> None:\n    {line}  # noqa\n",
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(copy)!r}); {LINT}"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The gate can fail: the engine importing the notebook layer (in a function) is caught."""
    out = _lint_with(tmp_path, "engine/runner.py", "from convlab.notebook import progress")
    assert out.returncode != 0
    assert "convlab.engine.runner -> convlab.notebook.progress" in out.stdout


def test_analysis_importing_a_view_breaks_the_contract(tmp_path: Path) -> None:
    """Analysis results are data: a direct import of a view, even inside a method (as
    `Comparison.plot` had), breaks the forbidden contract, which lists no exception."""
    out = _lint_with(tmp_path, "analysis/compare.py", "from convlab.notebook import charts")
    assert out.returncode != 0
    assert "convlab.model.faces BROKEN" in out.stdout  # the forbidden contract's own verdict


def test_the_old_display_modules_are_gone() -> None:
    assert not (ROOT / "convlab" / "model" / "_display.py").exists()
    assert not (ROOT / "convlab" / "_run_display.py").exists()
