import importlib
import subprocess
import sys

import convlab


def test_all_is_sorted():
    assert convlab.__all__ == sorted(convlab.__all__)


def test_every_public_name_resolves():
    for name in convlab.__all__:
        if name in convlab._LAZY and importlib.util.find_spec(convlab._LAZY[name]) is None:
            continue  # a part not built yet
        assert getattr(convlab, name) is not None, name


def test_import_does_not_load_ui_libraries():
    code = (
        "import sys, convlab; bad = [m for m in ('plotly', 'ipywidgets', 'IPython', 'itables')"
        " if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
