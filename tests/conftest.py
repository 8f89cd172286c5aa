"""Shared fixtures."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from convlab.agents import AGENT_SPECS
from convlab.checks import EVALUATORS
from convlab.registry import Registry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA = ROOT / "tests" / "data"
# Real suite files of the systems convlab reads, copied with their licenses (SOURCE.md in each).
CORPUS = DATA / "corpus"
# The upstream pages that define the formats, saved as text (upstream_docs/SOURCE.md).
UPSTREAM_DOCS = DATA / "upstream_docs"


def in_ci() -> bool:
    """CI sets CI=true (GitHub Actions, GitLab and most others do)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# CI replays the same examples every run (a red CI must be reproducible); locally,
# hypothesis explores new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if in_ci():
    settings.load_profile("ci")


Register = Callable[[str], Callable[[Callable[..., Any]], Callable[..., Any]]]


@pytest.fixture(scope="session", autouse=True)
def _convlab_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every run the tests make is recorded under a temporary CONVLAB_HOME, never in the
    real ~/.convlab: set in the environment, so the CLI processes and notebook kernels the
    tests start inherit it."""
    home = tmp_path_factory.mktemp("convlab-home")
    before = os.environ.get("CONVLAB_HOME")
    os.environ["CONVLAB_HOME"] = str(home)
    yield home
    if before is None:
        os.environ.pop("CONVLAB_HOME", None)
    else:
        os.environ["CONVLAB_HOME"] = before


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CONVLAB_HOME for one test (the history tests) (child processes inherit it)."""
    folder = tmp_path / "home"
    monkeypatch.setenv("CONVLAB_HOME", str(folder))
    return folder


@pytest.fixture
def register_evaluator() -> Iterator[Register]:
    """`@register_evaluator(name)` registers like `@convlab.evaluator(name)`, for one test."""
    with contextlib.ExitStack() as undo:

        def register(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
            def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
                undo.enter_context(EVALUATORS.registered(name, fn))
                return fn

            return deco

        yield register


GLOBAL_REGISTRIES: tuple[Registry[Any], ...] = (EVALUATORS, AGENT_SPECS)


def leaked(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names a test added or replaced with its own code (convlab's own lazy imports aside),
    or removed."""
    changed = {
        name
        for name, item in after.items()
        if before.get(name) is not item
        and not str(getattr(item, "__module__", "")).startswith("convlab")
    }
    return sorted(changed | (set(before) - set(after)))


@pytest.fixture(autouse=True)
def _registrations_are_undone() -> Iterator[None]:
    """A test that registers an evaluator or agent spec and leaves it behind errors."""
    before = [registry.entries() for registry in GLOBAL_REGISTRIES]
    yield
    for registry, entries in zip(GLOBAL_REGISTRIES, before, strict=True):
        names = leaked(entries, registry.entries())
        for name in names:  # undo it so the next tests are not affected either
            if name in entries:
                registry.add(name, entries[name])
            elif name in registry:
                registry.unregister(name)
        assert not names, (
            f"this test changed {registry.kind}s and left them changed: {names}; "
            "register them with a fixture that undoes them (register_evaluator, "
            f"{type(registry).__name__}.registered)"
        )


RAY_START_TIMEOUT = 900.0
"""Seconds the tests' Ray cluster gets to start: a loaded 2-core machine takes minutes."""


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray cluster for every Ray test of the pytest run (2 CPUs, no dashboard,
    100 MB of object store), started as convlab starts its own (tried again, each failed try
    ended, until `RAY_START_TIMEOUT`) and kept warm between tests, so `executor="ray"` in a
    test reuses it; ended at the end of the run. Ray is a test dependency
    (`pip install -e '.[test,ray]'`): without it the tests that use this fail, never skip."""
    import convlab as cl
    from convlab.executors._cluster import LOCAL, connect

    init = {"num_cpus": 2, "object_store_memory": 100 * 2**20}
    connect(LOCAL, init, start_timeout=RAY_START_TIMEOUT)
    try:
        yield
    finally:
        cl.executors.shutdown()


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless chromium for one browser test (tests/offline_browser.py).

    Per test, not per session: playwright's sync API keeps an event loop running on the main
    thread while it is open, and every later test would then see a running loop."""
    from offline_browser import launched

    with launched() as b:
        yield b


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--holodeck",
        action="store_true",
        help="also run the tests marked holodeck: real HoloDeck 0.7.1 beside convlab "
        "(builds .venv-holodeck with pip when needed; README, 'HoloDeck parity')",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect (not skip) the HoloDeck parity tests unless --holodeck asks for them: they
    need a second venv and minutes. pytest's summary line counts them as deselected."""
    if config.getoption("--holodeck"):
        return
    heavy = [item for item in items if item.get_closest_marker("holodeck")]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = [item for item in items if not item.get_closest_marker("holodeck")]
