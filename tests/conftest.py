"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
EXAMPLES = ROOT / "examples"


@pytest.fixture
def shared() -> Path:
    """The shared/ folder beside the project (seeds, corpus, bench)."""
    if not SHARED.exists():
        pytest.skip("shared/ is not beside the project")
    return SHARED
