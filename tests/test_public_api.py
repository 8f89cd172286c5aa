"""The public API a user can guess: `__all__` is exactly the package's public names, sorted,
and every one of them resolves (no part is allowed to be missing)."""

import subprocess
import sys
from types import ModuleType

import convlab

# Public-looking names of `vars(convlab)` that are deliberately not exported, with the reason.
NOT_EXPORTED = {
    "load_ipython_extension": "the hook IPython calls for `%load_ext convlab`",
    "Any": "a typing import of the package itself",
    "TYPE_CHECKING": "a typing import of the package itself",
}


def test_all_is_sorted():
    assert convlab.__all__ == sorted(convlab.__all__)


def test_every_public_name_resolves():
    missing = [name for name in convlab.__all__ if getattr(convlab, name, None) is None]
    assert not missing, f"in convlab.__all__ but not importable: {missing}"


def test_star_import_gives_exactly_all():
    namespace: dict[str, object] = {}
    exec("from convlab import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == convlab.__all__


def test_all_lists_every_public_name():
    for name in convlab._LAZY:
        getattr(convlab, name)  # a lazy name joins vars(convlab) on first use
    public = sorted(
        name
        for name, value in vars(convlab).items()
        if (not name.startswith("_") or name == "__version__")
        and name not in NOT_EXPORTED
        # Subpackages appear as attributes once imported; only deliberate ones are exported.
        and not (isinstance(value, ModuleType) and name not in convlab.__all__)
    )
    assert convlab.__all__ == public
    assert not set(NOT_EXPORTED) & set(convlab.__all__)
    assert callable(convlab.load_ipython_extension)


def test_the_lazy_table_names_only_exported_names():
    assert set(convlab._LAZY) <= set(convlab.__all__)


def test_import_does_not_load_ui_libraries():
    code = (
        "import sys, convlab; bad = [m for m in ('plotly', 'ipywidgets', 'IPython', 'itables')"
        " if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class a module of convlab defines (imported, then read off the module)."""
    import importlib
    import inspect
    import pkgutil

    found: dict[type[BaseException], None] = {}
    for info in pkgutil.walk_packages(convlab.__path__, "convlab."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            is_exception = inspect.isclass(value) and issubclass(value, BaseException)
            if is_exception and value.__module__.startswith("convlab"):
                found[value] = None
    return list(found)


def test_every_exception_is_defined_in_errors_py():
    elsewhere = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _exception_classes()
        if cls.__module__ != "convlab.errors"
    ]
    assert not elsewhere, f"exceptions defined outside convlab/errors.py: {elsewhere}"


def test_every_error_a_user_meets_is_exported_and_in_the_readme():
    from pathlib import Path

    from convlab import errors

    user_errors = [c for c in _exception_classes() if issubclass(c, errors.ConvlabError)]
    assert len(user_errors) >= 18  # the walk found them (ConvlabError and its 17 subclasses)
    missing = [c.__name__ for c in user_errors if getattr(convlab, c.__name__, None) is not c]
    assert not missing, f"not exported from convlab: {missing}"
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Errors", 1)[1].split("\n## ", 1)[0]
    absent = [c.__name__ for c in user_errors if f"| `{c.__name__}`" not in table]
    assert not absent, f"missing from the README's error table: {absent}"
    tree = errors.__doc__ or ""
    assert not [c.__name__ for c in _exception_classes() if c.__name__ not in tree]


def test_records_a_user_reads_are_exported():
    from convlab.model import ErrorInfo, TurnResult

    assert convlab.ErrorInfo is ErrorInfo and convlab.TurnResult is TurnResult


def test_old_import_locations_still_work():
    from convlab import errors
    from convlab.checks.judge import JudgeNotConfiguredError
    from convlab.engine.store import StoreError
    from convlab.model.codec import FormatError
    from convlab.report.notebook import NotebookError, ReportInputError

    assert JudgeNotConfiguredError is errors.JudgeNotConfiguredError
    assert StoreError is errors.StoreError and FormatError is errors.FormatError
    assert NotebookError is errors.NotebookError and ReportInputError is errors.ReportInputError
