"""Imports point one way: the engine, the model's data and the loaders know no view."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "convlab"
VIEWS = ("convlab.notebook", "convlab.report", "convlab.api", "convlab.cli")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_engine_checks_formats_and_agents_import_no_view() -> None:
    bad = {
        f"{p.relative_to(ROOT.parent)}: {name}"
        for package in ("engine", "checks", "formats", "agents")
        for p in (ROOT / package).rglob("*.py")
        for name in _imports(p)
        if name.startswith(VIEWS)
    }
    assert not bad, sorted(bad)


def test_model_objects_reach_the_view_only_through_lazy_hooks() -> None:
    for p in (ROOT / "model").rglob("*.py"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        top = {
            n.module
            for n in tree.body
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(VIEWS)
        }
        assert not top, f"{p.name} imports {top} at module level"


def test_the_old_display_modules_are_gone() -> None:
    assert not (ROOT / "model" / "_display.py").exists()
    assert not (ROOT / "_run_display.py").exists()
