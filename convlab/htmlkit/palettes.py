"""convlab's colours: a light and a dark palette, and the colour of each status, stability
class, verdict, blame and change (for HTML, following the theme, and for charts).

Colours follow the page that shows them. Each view carries `THEME_CSS`, which defines
convlab's own CSS custom properties (`--cl-fg`, `--cl-muted`, `--cl-bg`, `--cl-passed`, ...)
on every `.convlab` element; the rules and the inline styles only refer to those properties:

- the foreground, backgrounds and borders come from the host's variables where there are
  some: JupyterLab's and Notebook 7's `--jp-*`, VS Code's `--vscode-*`;
- the status colours and the muted grey are convlab's, one set for a light background and
  one for a dark one, each with a contrast of at least 4.5:1 on the backgrounds they sit on
  (`LIGHT`, `DARK`);
- the dark set applies under a dark host theme (JupyterLab's `data-jp-theme-light="false"`,
  VS Code's `vscode-dark` / `vscode-high-contrast` body classes) and, on a plain page with
  no host (an exported report, a classic notebook aside), under `prefers-color-scheme: dark`,
  where the view also paints its own dark background.

Inline colours are written `var(--cl-failed,#c21f2b)`: a page that drops `<style>` (a
sanitiser) still shows the light colour.

Glyphs are plain Unicode text (no emoji): a browser or CI image without an emoji font still
draws them.
"""

from __future__ import annotations

__all__ = [
    "BLAME_COLORS",
    "CHANGE_COLORS",
    "CLASS_COLORS",
    "CLASS_CSS",
    "CLASS_TEXT_COLORS",
    "DARK",
    "HOST_VARIABLES",
    "LIGHT",
    "STABILITY_COLORS",
    "STABILITY_CSS",
    "STABILITY_TEXT_COLORS",
    "STATUS_COLORS",
    "STATUS_CSS",
    "VERDICT_COLORS",
    "css_color",
]

LIGHT = {
    "fg": "#1f2328",
    "muted": "#57606a",
    "bg": "#ffffff",
    "bg2": "#f6f8fa",
    "border": "#d0d7de",
    "line": "#eaeef2",
    "accent": "#8c959f",
    "user-bg": "#ddf4ff",
    "user-border": "#b6e3ff",
    "passed": "#1a7431",
    "failed": "#c21f2b",
    "error": "#a84300",
    "timeout": "#7544cc",
    "skipped": "#57606a",
    "cancelled": "#57606a",
    "blocked": "#865c00",
    "running": "#0a61c7",
    "mostly": "#476e1e",
    "warn": "#865c00",
    "del": "#82071e",
    "del-bg": "#ffebe9",
    "ins": "#116329",
    "ins-bg": "#dafbe1",
}
"""Token -> colour on a light background (white, #f6f8fa, #f5f5f5, the user bubble, a 12%
tint of the colour itself): every text colour here keeps 4.9:1 or more on each of them."""

DARK = {
    "fg": "#e6edf3",
    "muted": "#9198a1",
    "bg": "#0d1117",
    "bg2": "#161b22",
    "border": "#3d444d",
    "line": "#262c36",
    "accent": "#656c76",
    "user-bg": "#102a43",
    "user-border": "#1f4a73",
    "passed": "#3fb950",
    "failed": "#ff7b72",
    "error": "#f0883e",
    "timeout": "#bc8cff",
    "skipped": "#9198a1",
    "cancelled": "#9198a1",
    "blocked": "#d29922",
    "running": "#58a6ff",
    "mostly": "#8ddb8c",
    "warn": "#d29922",
    "del": "#ffa198",
    "del-bg": "#3c1618",
    "ins": "#7ee787",
    "ins-bg": "#12311d",
}
"""Token -> colour on a dark background (JupyterLab Dark's #111 and #212121, VS Code Dark+'s
#1e1e1e, #0d1117, the dark user bubble): 5:1 or more."""

HOST_VARIABLES = {
    "fg": ("--jp-content-font-color1", "--vscode-editor-foreground"),
    "bg": ("--jp-layout-color0", "--vscode-editor-background"),
    "bg2": ("--jp-cell-editor-background", "--vscode-textCodeBlock-background"),
    "border": ("--jp-border-color1", "--vscode-editorWidget-border"),
    "line": ("--jp-border-color2", "--vscode-editorGroup-border"),
}
"""Tokens taken from the host's variables when it has them (JupyterLab first, then VS Code)."""

_STATUSES = ("passed", "failed", "error", "timeout", "skipped", "cancelled", "blocked", "running")


def css_color(token: str) -> str:
    """`var(--cl-TOKEN,#light)`: a palette colour for an inline style."""
    return f"var(--cl-{token},{LIGHT.get(token, LIGHT['muted'])})"


STATUS_COLORS = {s: LIGHT[s] for s in _STATUSES}
"""Status -> light colour (chart marks; HTML uses `STATUS_CSS`, which follows the theme)."""

STATUS_CSS = {s: css_color(s) for s in _STATUSES}
"""Status -> the theme-following colour for HTML text and bars."""

CLASS_COLORS = {
    "stable": "#1a7f37",
    "mostly_stable": "#4d9a2c",
    "unstable": "#d4a72c",
    "highly_unstable": "#cf222e",
}
"""Yao's stability classes -> fill colour of a chart mark."""

CLASS_TEXT_COLORS = {
    "stable": LIGHT["passed"],
    "mostly_stable": LIGHT["mostly"],
    "unstable": LIGHT["warn"],
    "highly_unstable": LIGHT["failed"],
}
"""Yao's stability classes -> colour of chart text on a light background (4.5:1 or more)."""

CLASS_CSS = {
    "stable": css_color("passed"),
    "mostly_stable": css_color("mostly"),
    "unstable": css_color("warn"),
    "highly_unstable": css_color("failed"),
}
"""Yao's stability classes -> the theme-following colour for text (a badge in a table)."""

VERDICT_COLORS = {
    "always passes": css_color("passed"),
    "flaky": css_color("warn"),
    "always fails": css_color("failed"),
    "one run": css_color("muted"),
}
"""`Run.stability()`'s plain-word verdict -> colour."""

STABILITY_COLORS = {
    "stable": CLASS_COLORS["stable"],
    "mostly stable": CLASS_COLORS["mostly_stable"],
    "unstable": CLASS_COLORS["unstable"],
    "highly unstable": LIGHT["error"],  # orange: red is for a case that never passes
    "always fails": CLASS_COLORS["highly_unstable"],
    "one run": LIGHT["accent"],
}
"""`Run.stability()`'s `stability`, the class the views show -> fill colour of a chart mark."""

STABILITY_TEXT_COLORS = {
    "stable": LIGHT["passed"],
    "mostly stable": LIGHT["mostly"],
    "unstable": LIGHT["warn"],
    "highly unstable": LIGHT["error"],
    "always fails": LIGHT["failed"],
    "one run": LIGHT["muted"],
}
"""`stability` -> colour of chart text on a light background (4.5:1 or more)."""

STABILITY_CSS = {
    "stable": css_color("passed"),
    "mostly stable": css_color("mostly"),
    "unstable": css_color("warn"),
    "highly unstable": css_color("error"),
    "always fails": css_color("failed"),
    "one run": css_color("muted"),
}
"""`stability` -> the theme-following colour for text (a badge in a table)."""

BLAME_COLORS = {
    "agent": css_color("failed"),
    "simulator": css_color("warn"),
    "judge": css_color("warn"),
    "infrastructure": css_color("warn"),
    "suite": css_color("warn"),
    "hook": css_color("warn"),
}
"""`Run.df`'s blame -> colour: the agent's failures red, the ones around it amber."""

CHANGE_COLORS = {
    "worse": css_color("failed"),
    "better": css_color("passed"),
    "same": css_color("muted"),
    "before_only": css_color("warn"),
    "after_only": css_color("running"),
}
"""`convlab.compare()`'s `change` column -> colour."""
