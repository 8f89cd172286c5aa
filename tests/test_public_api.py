import subprocess
import sys

import convlab


def test_all_is_sorted_and_complete():
    public = sorted(n for n in vars(convlab) if not n.startswith("_") and n not in {
        "agents", "checks", "errors", "formats", "model", "registry", "engine", "plan",
        "stats", "notebook", "report", "results", "cli",
    })
    assert convlab.__all__ == sorted(convlab.__all__, key=str.casefold) or convlab.__all__ == sorted(
        convlab.__all__
    )
    assert set(public) <= set(convlab.__all__)


def test_import_does_not_load_ui_libraries():
    code = (
        "import sys, convlab; bad = [m for m in ('plotly', 'ipywidgets', 'IPython', 'itables')"
        " if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
