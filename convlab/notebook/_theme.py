"""Chart colours that follow the theme: which theme a chart is drawn in, and the dark palette.

A Plotly figure's colours are data, fixed when it is made (plotly.js cannot read CSS
variables), so the theme is resolved then from `convlab.options.theme` (see `Options` for what
"auto" can know). Charts are built light; in dark, one mapping swaps each light colour of
convlab's charts for its dark counterpart (`CHART_DARK`, one-to-one, so it also maps back):
in every `*color` field and in the `color:` of the pseudo-HTML spans of titles, ticks and
hovers. Case ids and other data values are never touched.

A figure made under "auto" also carries a small script in its HTML that re-colours it to
the theme of the page it is drawn in (JupyterLab's `data-jp-theme-light`, VS Code's body
classes, else `prefers-color-scheme`), with the same mapping.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

from convlab._options import options

__all__ = ["CHART_DARK", "chart_theme", "follow_script", "host_theme", "recolor", "themed"]

ChartTheme = Literal["light", "dark"]

CHART_DARK = {
    "white": "#111111",  # paper, plot area, hover box, marker outlines
    "#1f2328": "#e6edf3",  # ink
    "#57606a": "#9198a1",  # muted text
    "#424a53": "#c9d1d9",  # whiskers, bar labels
    "#eaeef2": "#30363d",  # grid
    "#f3f4f6": "#21262d",  # faint grid
    "#d0d7de": "#3d444d",  # axis lines
    "#afb8c1": "#6e7681",  # guide lines
    "#1a7431": "#3fb950",  # status colours (convlab.htmlkit.palettes: LIGHT -> DARK)
    "#c21f2b": "#ff7b72",
    "#a84300": "#f0883e",
    "#7544cc": "#bc8cff",
    "#865c00": "#d29922",
    "#0a61c7": "#58a6ff",
    "#476e1e": "#8ddb8c",
    "#1a7f37": "#238636",  # stability classes (chart fills; white text inside keeps 4.6:1)
    "#4d9a2c": "#6cc644",
    "#d4a72c": "#e3b341",
    "#cf222e": "#f85149",
    "#0969da": "#4493f8",
}
"""Light chart colour -> dark one (lower-case keys; one-to-one)."""
_LIGHT_BACK = {dark: light for light, dark in CHART_DARK.items()}
_TEXT_KEYS = frozenset({"text", "ticktext", "hovertemplate", "hovertext", "name", "customdata"})
"""Keys whose strings may hold pseudo-HTML `<span style='color:…'>` (never data values)."""
_SPAN = re.compile(r"color:\s*(#[0-9a-fA-F]{6}|white)")
_DARK_WORDS = ("dark", "night", "dracula", "darcula", "monokai", "nord", "solarized dark")
_THEMES_FILE = Path("@jupyterlab", "apputils-extension", "themes.jupyterlab-settings")


def _json5(text: str) -> Any:
    """A JupyterLab settings file: JSON with `//` comments and trailing commas allowed."""
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    return json.loads(text)


def _theme_setting(settings: Any) -> ChartTheme | None:
    """'dark'/'light' from the themes plugin's settings; None when it follows the system."""
    if not isinstance(settings, dict) or settings.get("adaptive-theme") is True:
        return None
    name = settings.get("theme")
    if not isinstance(name, str):
        return None
    return "dark" if any(w in name.lower() for w in _DARK_WORDS) else "light"


def _read(path: Path) -> Any:
    try:
        return _json5(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def host_theme() -> ChartTheme | None:
    """The front end's theme as far as this process can know it, or None.

    Only under a Jupyter server (it names the session in `JPY_SESSION_NAME`) and not in
    VS Code (`VSCODE_PID`): JupyterLab's user setting, else its `overrides.json`, else
    JupyterLab's default (light).
    """
    env = os.environ
    if "VSCODE_PID" in env or "JPY_SESSION_NAME" not in env:
        return None
    config = env.get("JUPYTER_CONFIG_DIR") or str(Path.home() / ".jupyter")
    user = Path(env.get("JUPYTERLAB_SETTINGS_DIR") or Path(config, "lab", "user-settings"))
    found = _read(user / _THEMES_FILE)
    if isinstance(found, dict) and ("theme" in found or "adaptive-theme" in found):
        return _theme_setting(found)
    app = Path(env.get("JUPYTERLAB_DIR") or Path(sys.prefix, "share", "jupyter", "lab"))
    overrides = _read(app / "settings" / "overrides.json")
    if isinstance(overrides, dict) and "@jupyterlab/apputils-extension:themes" in overrides:
        return _theme_setting(overrides["@jupyterlab/apputils-extension:themes"])
    return "light"


def chart_theme() -> ChartTheme:
    """The theme a chart made now is drawn in (`convlab.options.theme`, "auto" resolved)."""
    if options.theme != "auto":
        return options.theme
    return host_theme() or "light"


def _color(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value.lower(), value)
    if isinstance(value, list | tuple):
        return [_color(v, mapping) for v in value]
    return recolor(value, mapping)


def _spans(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _SPAN.sub(lambda m: "color:" + mapping.get(m[1].lower(), m[1]), value)
    if isinstance(value, list | tuple):
        return [_spans(v, mapping) for v in value]
    return recolor(value, mapping)


def recolor(obj: Any, mapping: dict[str, str]) -> Any:
    """A copy of a figure's data or layout with its colours mapped (see the module doc)."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if key.endswith("color"):
                out[key] = _color(value, mapping)
            elif key in _TEXT_KEYS:
                out[key] = _spans(value, mapping)
            else:
                out[key] = recolor(value, mapping)
        return out
    if isinstance(obj, list | tuple):
        return [recolor(v, mapping) for v in obj]
    return obj


def themed(
    data: list[dict[str, Any]], layout: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any], ChartTheme, bool]:
    """(data, layout) in the chart theme, the theme, and whether it follows the page."""
    theme = chart_theme()
    if theme == "dark":
        data, layout = recolor(data, CHART_DARK), recolor(layout, CHART_DARK)
    return data, layout, theme, options.theme == "auto"


_FOLLOW_JS = """(function(){var gd=document.getElementById(%(id)s);
if(!gd||!window.Plotly||!gd.data)return;
var b=document.body,c=b.classList,a=b.getAttribute("data-jp-theme-light");
var dark=a!==null?a==="false":c.contains("vscode-dark")||(c.contains("vscode-high-contrast")
&&!c.contains("vscode-high-contrast-light"))||(!c.contains("vscode-light")
&&!c.contains("notebook_app")&&!!window.matchMedia
&&window.matchMedia("(prefers-color-scheme: dark)").matches);
var want=dark?"dark":"light";if(want===%(built)s)return;var M=%(maps)s[want];
var S=/color:\\s*(#[0-9a-fA-F]{6}|white)/g,T=%(text)s;
function col(v){if(typeof v==="string"){var k=v.toLowerCase();return k in M?M[k]:v;}
return Array.isArray(v)?v.map(col):walk(v);}
function spans(v){if(typeof v==="string")return v.replace(S,function(m,h){
var k=h.toLowerCase();return k in M?"color:"+M[k]:m;});
return Array.isArray(v)?v.map(spans):walk(v);}
function walk(o){if(Array.isArray(o))return o.map(walk);if(!o||typeof o!=="object")return o;
var r={};for(var k in o){if(k.charAt(0)==="_")continue;var v=o[k];
r[k]=/color$/.test(k)?col(v):T.indexOf(k)>=0?spans(v):walk(v);}return r;}
window.Plotly.react(gd,walk(gd.data),walk(gd.layout));})();"""


def follow_script(div_id: str, built: ChartTheme) -> str:
    """`<script>` re-colouring the figure in `div_id` to the page's theme when it differs."""
    js = _FOLLOW_JS % {
        "id": json.dumps(div_id),
        "built": json.dumps(built),
        "maps": json.dumps({"dark": CHART_DARK, "light": _LIGHT_BACK}),
        "text": json.dumps(sorted(_TEXT_KEYS)),
    }
    return "<script>" + js.replace("\n", "") + "</script>"
