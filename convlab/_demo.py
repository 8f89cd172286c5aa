"""`convlab demo`: every example suite on its built-in demo agent, offline, checked against
the expected outcome of each case (examples/expected.yaml), including the cases that fail
on purpose.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["find_examples", "run_examples"]


def find_examples(path: str | None = None) -> Path:
    """The examples folder: the given one, ./examples, or the source checkout's."""
    candidates = (
        [Path(path)]
        if path
        else [Path("examples"), Path(__file__).resolve().parent.parent / "examples"]
    )
    for c in candidates:
        if (c / "expected.yaml").exists():
            return c
    raise FileNotFoundError(
        "no examples folder with expected.yaml found (run from the convlab checkout, "
        "or pass the folder: convlab demo PATH)"
    )


def run_examples(root: Path, runs: int = 1) -> tuple[bool, list[str]]:
    """Run each example; return (all outcomes as expected, report lines)."""
    import convlab as cl

    expected: dict[str, Any] = yaml.safe_load((root / "expected.yaml").read_text("utf-8"))
    lines, all_ok = [], True
    for name, spec in expected.items():
        suite = cl.load(root / spec["path"])
        run = cl.run(suite, spec["agent"], runs=runs, simulator=spec.get("simulator"))
        mismatches = [
            f"    {r.case_id}: expected {spec['cases'].get(r.case_id)}, got {r.status}"
            for r in run.results
            if spec["cases"].get(r.case_id) != r.status
        ]
        on_purpose = sum(1 for s in spec["cases"].values() if s != "passed")
        verdict = "as expected" if not mismatches else "NOT as expected"
        lines.append(
            f"{name}: {len(suite.cases)} cases on {spec['agent']}, "
            f"{on_purpose} failing on purpose -> outcomes {verdict}"
        )
        lines += mismatches
        all_ok = all_ok and not mismatches
    return all_ok, lines
