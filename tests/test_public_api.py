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
