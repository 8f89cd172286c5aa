"""One palette and one stylesheet for every view (tree, cards, tables, charts, reports).

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
    "CSS",
    "DARK",
    "GLYPHS",
    "LIGHT",
    "PAGE_BODY_CSS",
    "STABILITY_COLORS",
    "STABILITY_CSS",
    "STABILITY_TEXT_COLORS",
    "STATUS_COLORS",
    "STATUS_CSS",
    "TABLE_CSS",
    "THEME_CSS",
    "TRANSCRIPT_CSS",
    "TREE_BODY_HEIGHT",
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

_HOST = {
    "fg": ("--jp-content-font-color1", "--vscode-editor-foreground"),
    "bg": ("--jp-layout-color0", "--vscode-editor-background"),
    "bg2": ("--jp-cell-editor-background", "--vscode-textCodeBlock-background"),
    "border": ("--jp-border-color1", "--vscode-editorWidget-border"),
    "line": ("--jp-border-color2", "--vscode-editorGroup-border"),
}
"""Tokens taken from the host's variables when it has them (JupyterLab first, then VS Code)."""

TREE_BODY_HEIGHT = "360px"
"""The live tree's body height cap: past it the body scrolls and its header stays in view."""

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

GLYPHS = {
    "passed": "✓",
    "failed": "✗",
    "error": "!",
    "timeout": "◷",
    "skipped": "○",
    "cancelled": "■",
    "blocked": "⊘",
    "running": "…",
}
"""Status -> a glyph that needs no emoji font: each is in common text fonts (DejaVu Sans,
Segoe UI Symbol, Apple Symbols), so a page falls back to one of them, never to an empty box.
(U+23F1, the stopwatch, is only in emoji fonts: a box where there is none.)"""


def _declarations(palette: dict[str, str], host: bool) -> str:
    out = []
    for token, value in palette.items():
        if host and token in _HOST:
            jp, vscode = _HOST[token]
            value = f"var({jp},var({vscode},{value}))"
        out.append(f"--cl-{token}:{value}")
    return ";".join(out)


_DARK_HOST = (
    'body[data-jp-theme-light="false"] .convlab,body.vscode-dark .convlab,'
    "body.vscode-high-contrast:not(.vscode-high-contrast-light) .convlab"
)
_PLAIN = (
    "body:not([data-jp-theme-light]):not([data-cl-theme]):not(.vscode-light)"
    ":not(.vscode-dark):not(.vscode-high-contrast):not(.notebook_app) .convlab"
)
THEME_CSS = (
    f"\n.convlab{{{_declarations(LIGHT, True)};color:var(--cl-fg)}}\n"
    f"{_DARK_HOST}{{{_declarations(DARK, True)};color-scheme:dark}}\n"
    "@media (prefers-color-scheme:dark){"
    f"body[data-cl-theme=auto] .convlab{{{_declarations(DARK, True)};color-scheme:dark}}"
    f"{_PLAIN}{{{_declarations(DARK, False)};color-scheme:dark;background:var(--cl-bg)}}}}\n"
)
"""The palette as custom properties on `.convlab`: light by default, dark under a dark host
theme, and dark under `prefers-color-scheme: dark` on a page with no host (`data-cl-theme=
"auto"` marks an exported notebook whose variables follow the scheme)."""

CSS = (
    THEME_CSS
    + """
.convlab{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;
 font-size:13px;line-height:1.45}
.convlab code,.convlab :not(pre)>code,.jp-ThemedContainer .convlab code,
.jp-ThemedContainer .convlab :not(pre)>code{font-family:ui-monospace,SFMono-Regular,Menlo,
 Consolas,monospace;font-size:12px;color:inherit;background:none;padding:0}
.convlab .cl-card{border:1px solid var(--cl-border);border-radius:6px;padding:8px 12px;
 margin:4px 0;max-width:100%;overflow-x:auto}
.convlab .cl-title{font-weight:600;font-size:14px;margin-bottom:4px}
.convlab .cl-counts span{margin-right:12px;white-space:nowrap}
.convlab .cl-rate{font-size:20px;font-weight:600}
.convlab .cl-muted{color:var(--cl-muted)}
.convlab .cl-bar{display:flex;height:8px;border-radius:4px;overflow:hidden;
 background:var(--cl-line);margin:6px 0;max-width:480px}
.convlab .cl-bar div{height:100%}
.convlab details{margin:1px 0 1px 0}
.convlab details>summary{cursor:pointer;list-style-position:inside}
.convlab .cl-turns{margin:2px 0 4px 18px;padding:0;list-style:none}
.convlab .cl-turns li{margin:1px 0;word-break:break-word}
.convlab .cl-who{font-weight:600;color:var(--cl-muted)}
.convlab .cl-fail{color:var(--cl-failed)}
.convlab .cl-ok{color:var(--cl-passed)}
.convlab .cl-blame{color:var(--cl-warn)}
.convlab .cl-blame-agent{color:var(--cl-failed)}
.convlab pre.cl-json,.jp-ThemedContainer .convlab pre.cl-json{margin:1px 0;padding:2px 6px;
 white-space:pre-wrap;overflow-wrap:anywhere;
 color:var(--cl-fg);background:var(--cl-bg2);border:0;border-radius:4px;font-size:12px;
 max-height:24em;overflow-y:auto;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.convlab table.cl-small{border-collapse:collapse;margin:4px 0;font-size:inherit;color:inherit;
 background:none}
.convlab table.cl-small td,.convlab table.cl-small th{border-bottom:1px solid var(--cl-line);
 padding:2px 8px;text-align:left;vertical-align:top;color:inherit;background:none}
"""
    + f"""
.convlab .cl-scroll{{max-height:{TREE_BODY_HEIGHT};overflow:auto}}
.convlab.cl-tree-head{{position:sticky;top:0;z-index:3;background:var(--cl-bg);
 border-bottom:1px solid var(--cl-line);padding-bottom:2px}}
.jp-OutputArea:has(.cl-tree-head),.jp-OutputArea-child:has(.cl-tree-head),
.jp-OutputArea-output:has(.cl-tree-head){{overflow:visible}}
"""
)
"""Inline stylesheet (no external assets), scoped under `.convlab` (and, for the live tree's
sticky header, the JupyterLab output area that holds it)."""

TRANSCRIPT_CSS = """
.convlab .cl-answer{max-width:880px}
.convlab .cl-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 10px;
 padding-bottom:6px;margin-bottom:6px;border-bottom:1px solid var(--cl-line)}
.convlab .cl-verdict{font-weight:700;letter-spacing:.04em}
.convlab .cl-msg{display:flex;flex-direction:column;align-items:flex-start;margin:6px 0}
.convlab .cl-msg.cl-user{align-items:flex-end}
.convlab .cl-role{font-size:11px;color:var(--cl-muted);margin:0 4px 1px}
.convlab .cl-bubble{white-space:pre-wrap;overflow-wrap:anywhere;padding:6px 10px;
 border-radius:10px;max-width:80%;border:1px solid var(--cl-border);background:var(--cl-bg2)}
.convlab .cl-user .cl-bubble{background:var(--cl-user-bg);border-color:var(--cl-user-border)}
.convlab .cl-hist .cl-bubble,.convlab .cl-hist .cl-role{color:var(--cl-muted)}
.convlab .cl-empty{font-style:italic;color:var(--cl-muted)}
.convlab .cl-tool{max-width:80%;min-width:240px;margin:2px 0;padding:3px 8px;font-size:12px;
 border:1px solid var(--cl-border);border-left:3px solid var(--cl-accent);border-radius:6px;
 background:var(--cl-bg)}
.convlab .cl-tool-name{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,
 monospace}
.convlab .cl-kv{display:grid;grid-template-columns:max-content 1fr;gap:1px 8px;
 align-items:baseline}
.convlab .cl-kv>span{color:var(--cl-muted);font-size:11px}
.convlab .cl-kv>code{justify-self:start}
.convlab .cl-extra{max-width:80%;margin:3px 0;font-size:12px}
.convlab .cl-checks{margin-top:8px;padding-top:6px;border-top:1px solid var(--cl-line)}
.convlab .cl-check{margin:2px 0}
.convlab .cl-mark{display:inline-block;width:1.3em;font-weight:700;text-align:center}
.convlab .cl-why{margin:1px 0 5px 1.6em;font-size:12px}
.convlab .cl-sub{margin-left:1.4em}
"""
"""The chat transcript of `convlab.ask` (bubbles, tool blocks, assertion lines)."""

PAGE_BODY_CSS = f"""
body{{margin:0;background:{LIGHT["bg"]};color:{LIGHT["fg"]}}}
@media (prefers-color-scheme:dark){{body{{background:{DARK["bg"]};color:{DARK["fg"]}}}}}
"""
"""A standalone report page's body: light, or dark under `prefers-color-scheme: dark` (never
in a notebook output, where it would repaint the host's page)."""

TABLE_CSS = (
    THEME_CSS
    + """
.convlab.cl-table{max-width:100%;overflow-x:auto;margin:4px 0;font-size:13px;
 font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif}
.convlab.cl-table table.dataTable td:not(.dt-type-numeric),
.convlab.cl-table table.dataTable th:not(.dt-type-numeric){text-align:left}
.convlab.cl-table .cl-caption{font-weight:600;margin:2px 0 4px 0}
.convlab.cl-table .cl-note{color:var(--cl-warn);margin:2px 0 4px 0}
.convlab.cl-table .cl-desc{color:var(--cl-muted);margin:0 0 4px 0;max-width:70em}
.convlab .cl-badge{border-radius:3px;padding:0 5px;white-space:nowrap;font-weight:500}
.convlab details.cl-more>summary{cursor:pointer;list-style-position:inside;white-space:nowrap}
.convlab details.cl-more>div{white-space:pre-wrap;word-break:break-word;min-width:24em;
 max-width:70em;margin:2px 0 2px 12px;padding-left:6px;border-left:2px solid var(--cl-border)}
"""
)
"""Stylesheet shipped inside every interactive table's HTML (badges, expandable long texts).

Colours themselves are inline styles (`var(--cl-…,#light)`), so a page that drops `<style>`
(a sanitiser) still shows them."""
