"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI replays the same examples every run (a red CI must be reproducible); locally,
# hypothesis explores new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
EXAMPLES = ROOT / "examples"


@pytest.fixture
def shared() -> Path:
    """The shared/ folder beside the project (seeds, corpus, bench)."""
    if not SHARED.exists():
        pytest.skip("shared/ is not beside the project")
    return SHARED
