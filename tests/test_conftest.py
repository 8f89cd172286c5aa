"""The test suite's own guard: seed-conformance tests cannot pass silently in CI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SHARED, shared_folder


@pytest.mark.parametrize("value", ["true", "1", "True"])
def test_in_ci_a_missing_shared_folder_fails(tmp_path: Path, monkeypatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI must check it out beside the project"):
        shared_folder(tmp_path / "shared")


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_locally_a_missing_shared_folder_skips_and_says_why(
    tmp_path: Path, monkeypatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    missing = tmp_path / "shared"
    where = re.escape(f"need the shared/ folder at {missing}, missing")
    with pytest.raises(pytest.skip.Exception, match=where):
        shared_folder(missing)


def test_a_present_shared_folder_is_returned(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert shared_folder(tmp_path) == tmp_path
    assert SHARED.name == "shared"
