"""The theme without a browser: `cl.options.theme`, what "auto" reads, and the chart palette.

The browser checks (contrast in JupyterLab, VS Code and plain pages) are in
test_themes_browser.py and test_jupyterlab.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.htmlkit import CSS, DARK, LIGHT, STATUS_CSS, TABLE_CSS
from convlab.notebook._theme import CHART_DARK, chart_theme, host_theme, recolor

THEMES = Path("@jupyterlab", "apputils-extension", "themes.jupyterlab-settings")


@pytest.fixture
def theme() -> Iterator[None]:
    """Leaves `cl.options.theme` as the test found it."""
    old = cl.options.theme
    yield
    cl.options.theme = old


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A kernel started by a Jupyter server, with its own JupyterLab settings folder."""
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "quickstart.ipynb"))
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(tmp_path / "settings"))
    monkeypatch.setenv("JUPYTERLAB_DIR", str(tmp_path / "app"))
    monkeypatch.delenv("VSCODE_PID", raising=False)
    return tmp_path


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_options_theme_takes_three_values(theme: None) -> None:
    assert cl.options.theme == "auto"
    cl.options.theme = "dark"
    assert cl.options.theme == "dark" and "dark" in repr(cl.options)
    with pytest.raises(ValueError, match="auto, light, dark"):
        cl.options.theme = "blue"
    assert cl.options.theme == "dark"


def test_auto_reads_jupyterlab_settings(lab: Path, theme: None) -> None:
    assert host_theme() == "light"  # JupyterLab's default
    _write(
        lab / "app" / "settings" / "overrides.json",
        json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}),
    )
    assert host_theme() == "dark"
    settings = lab / "settings" / THEMES
    _write(settings, '{\n  // the user\'s choice\n  "theme": "JupyterLab Light",\n}\n')
    assert host_theme() == "light"  # the user's setting wins over overrides.json
    _write(settings, '{"theme": "JupyterLab Dark High Contrast"}')
    assert host_theme() == "dark" and chart_theme() == "dark"
    _write(settings, '{"adaptive-theme": true}')
    assert host_theme() is None and chart_theme() == "light"  # follows the OS: unknowable
    _write(settings, '{"theme": "JupyterLab Dark"}')
    cl.options.theme = "light"
    assert chart_theme() == "light"  # an explicit choice wins


def test_auto_knows_nothing_outside_a_jupyter_server_or_in_vscode(
    lab: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(lab / "settings" / THEMES, '{"theme": "JupyterLab Dark"}')
    assert host_theme() == "dark"
    monkeypatch.setenv("VSCODE_PID", "4242")
    assert host_theme() is None and chart_theme() == "light"
    monkeypatch.delenv("VSCODE_PID")
    monkeypatch.delenv("JPY_SESSION_NAME")  # nbclient, a script, plain IPython
    assert host_theme() is None


def _expense_run() -> cl.Run:
    return cl.run("examples/expense", "demo:expense", progress=False)


def test_charts_follow_the_theme(theme: None) -> None:
    run = _expense_run()
    cl.options.theme = "light"
    light = run.plot.pass_rates()
    cl.options.theme = "dark"
    dark = run.plot.pass_rates()
    assert light.layout.paper_bgcolor == "white" and dark.layout.paper_bgcolor == "#111111"
    assert dark.layout.font.color == "#e6edf3"
    assert "#9198a1" in dark.layout.title.text  # the subtitle's muted span
    assert [t.y for t in dark.data] == [t.y for t in light.data]  # data untouched
    for fig in (light, dark):  # an explicit theme is fixed: no script re-colours it
        assert "prefers-color-scheme" not in fig._repr_mimebundle_()["text/html"]
    cl.options.theme = "auto"
    auto = run.plot.pass_rates()._repr_mimebundle_()["text/html"]
    assert "prefers-color-scheme" in auto and "Plotly.react" in auto


def test_the_chart_palette_maps_one_to_one_and_leaves_data_alone() -> None:
    assert len(set(CHART_DARK.values())) == len(CHART_DARK)
    assert not set(CHART_DARK.values()) & set(CHART_DARK)
    spec: dict[str, Any] = {
        "y": ["color:#57606a", "white"],  # case ids are data, never re-coloured
        "marker": {"color": ["#1a7f37", "white"], "line": {"color": "white"}},
        "hovertemplate": "<span style='color:#57606a'>x</span>",
        "name": "passed",
    }
    dark = recolor(spec, CHART_DARK)
    assert dark["y"] == spec["y"]
    assert dark["marker"] == {"color": ["#238636", "#111111"], "line": {"color": "#111111"}}
    assert dark["hovertemplate"] == "<span style='color:#9198a1'>x</span>"
    back = {v: k for k, v in CHART_DARK.items()}
    assert recolor(dark, back) == spec


def test_views_refer_to_the_palette_variables() -> None:
    for sheet in (CSS, TABLE_CSS):
        assert 'body[data-jp-theme-light="false"] .convlab' in sheet
        assert "body.vscode-dark .convlab" in sheet
        assert "@media (prefers-color-scheme:dark)" in sheet
        assert "var(--jp-content-font-color1,var(--vscode-editor-foreground,#1f2328))" in sheet
    assert set(LIGHT) == set(DARK)
    assert STATUS_CSS["failed"] == f"var(--cl-failed,{LIGHT['failed']})"
    for hard in ("color:#1f2328", "background:#f6f8fa", "background:#fff"):
        assert hard not in CSS


def test_the_live_tree_keeps_its_header_above_a_bounded_body() -> None:
    from convlab.htmlkit import TREE_BODY_HEIGHT
    from convlab.notebook.progress import LiveTree

    tree = LiveTree()
    head, body = tree.box.children
    assert body is tree.body and tree.header in head.children and tree.bar in head.children
    assert {"convlab", "cl-tree-head"} <= set(head._dom_classes)  # sticky, with a background
    assert tree.body.layout.max_height == TREE_BODY_HEIGHT and tree.body.layout.overflow == "auto"
    assert tree.box.layout.overflow == "visible"  # else the header would stick to the box
    assert ".convlab.cl-tree-head{position:sticky;top:0" in CSS
    assert "class='cl-scroll'" in tree.snapshot_html()  # the static snapshot is bounded too
