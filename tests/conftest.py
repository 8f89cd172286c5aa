"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
EXAMPLES = ROOT / "examples"


def in_ci() -> bool:
    """CI sets CI=true (GitHub Actions, GitLab and most others do)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# CI replays the same examples every run (a red CI must be reproducible); locally,
# hypothesis explores new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if in_ci():
    settings.load_profile("ci")


def shared_folder(folder: Path = SHARED) -> Path:
    """`folder` if it exists; otherwise fail in CI, skip (saying why) elsewhere.

    The seed-conformance tests read the seeds and corpus there: in CI a checkout without the
    folder must not pass by skipping them.
    """
    if not folder.is_dir():
        message = f"the seed-conformance tests need the shared/ folder at {folder}, missing"
        if in_ci():
            pytest.fail(f"{message}; CI must check it out beside the project", pytrace=False)
        pytest.skip(f"{message} (with CI=true set, they fail instead of skipping)")
    return folder


@pytest.fixture
def shared() -> Path:
    """The shared/ folder beside the project (seeds, corpus, bench)."""
    return shared_folder()
