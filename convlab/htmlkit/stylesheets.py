"""convlab's stylesheets, all scoped under `.convlab` and built on the palettes' custom
properties (convlab.htmlkit.palettes explains the theming).

`STYLESHEET` is all of them: what a notebook gets once (convlab.htmlkit.bundle) and a
standalone page once in its head.
"""

from __future__ import annotations

from convlab.htmlkit.palettes import DARK, HOST_VARIABLES, LIGHT

__all__ = [
    "CSS",
    "DIFF_CSS",
    "PAGE_BODY_CSS",
    "PREVIEW_CSS",
    "REPORT_CSS",
    "SIDE_BY_SIDE_CSS",
    "STYLESHEET",
    "TABLE_CSS",
    "THEME_CSS",
    "TRANSCRIPT_CSS",
    "TREE_BODY_HEIGHT",
]

TREE_BODY_HEIGHT = "360px"
"""The live tree's body height cap: past it the body scrolls and its header stays in view."""


def _declarations(palette: dict[str, str], host: bool) -> str:
    out = []
    for token, value in palette.items():
        if host and token in HOST_VARIABLES:
            jp, vscode = HOST_VARIABLES[token]
            value = f"var({jp},var({vscode},{value}))"
        out.append(f"--cl-{token}:{value}")
    return ";".join(out)


_DARKHOST_VARIABLES = (
    'body[data-jp-theme-light="false"] .convlab,body.vscode-dark .convlab,'
    "body.vscode-high-contrast:not(.vscode-high-contrast-light) .convlab"
)
_PLAIN = (
    "body:not([data-jp-theme-light]):not([data-cl-theme]):not(.vscode-light)"
    ":not(.vscode-dark):not(.vscode-high-contrast):not(.notebook_app) .convlab"
)
THEME_CSS = (
    f"\n.convlab{{{_declarations(LIGHT, True)};color:var(--cl-fg)}}\n"
    f"{_DARKHOST_VARIABLES}{{{_declarations(DARK, True)};color-scheme:dark}}\n"
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

DIFF_CSS = """
.convlab .cl-diff{white-space:pre-wrap;overflow-wrap:anywhere;max-width:72em;padding:4px 8px;
 border:1px solid var(--cl-border);border-radius:6px;background:var(--cl-bg2);
 color:var(--cl-fg);font-size:12px;max-height:28em;overflow-y:auto}
.convlab .cl-diff del{background:var(--cl-del-bg);color:var(--cl-del);
 text-decoration:line-through}
.convlab .cl-diff ins{background:var(--cl-ins-bg);color:var(--cl-ins);text-decoration:none}
.convlab .cl-changes{margin:6px 0}
.convlab .cl-changes>summary{font-weight:600}
"""
"""Deletions struck through on red, insertions on green: told by the mark too, not by colour
alone."""

PREVIEW_CSS = """
.convlab.cl-table>div[id$=_fallback] :is(th,td){border:1px solid rgba(128,128,128,.35);
 padding:4px 8px;text-align:left}"""
"""The static preview's cell borders, once per table instead of inline on every cell."""

REPORT_CSS = """
main.convlab{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
main.convlab h1{font-size:22px;margin:8px 0 2px}
main.convlab h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;
 border-bottom:1px solid var(--cl-border)}
main.convlab .cl-meta{color:var(--cl-muted);margin-bottom:10px}
.convlab .cl-fail-item{border:1px solid var(--cl-border);border-radius:6px;padding:4px 10px;
 margin:6px 0}
.convlab .cl-fail-item>summary{font-weight:600}
.convlab .cl-turn{margin:4px 0 8px 0}
.convlab .cl-turn-h{font-size:11px;color:var(--cl-muted);text-transform:uppercase;margin-top:6px}
"""
"""A report's rules (its page, the instances that did not pass), scoped under `.convlab`."""

SIDE_BY_SIDE_CSS = """
.convlab .cl-sxs{border-collapse:collapse;width:100%;max-width:1100px;table-layout:fixed;
 font-size:12.5px;margin:6px 0}
.convlab .cl-sxs th,.convlab .cl-sxs td{border-bottom:1px solid var(--cl-line);padding:5px 8px;
 vertical-align:top;text-align:left;overflow-wrap:anywhere}
.convlab .cl-sxs th{font-weight:600}
.convlab .cl-sxs td.cl-sxs-turn{width:5.5em;color:var(--cl-muted);white-space:nowrap}
.convlab .cl-sxs tr.cl-fork>td{border-top:2px solid var(--cl-fg);
 background:var(--cl-bg2)}
.convlab .cl-sxs .cl-forkmark{display:inline-block;margin-top:2px;padding:0 5px;
 border-radius:8px;border:1px solid currentColor;color:var(--cl-fg);font-size:11px}
.convlab .cl-sxs .cl-said{color:var(--cl-muted)}
.convlab .cl-sxs .cl-said b{color:var(--cl-fg);font-weight:600}
.convlab .cl-sxs .cl-reply{white-space:pre-wrap;margin:3px 0}
.convlab .cl-sxs code{font-size:12px}
.convlab .cl-sxs .cl-only-ok{background:var(--cl-ins-bg);color:var(--cl-ins);
 text-decoration:underline}
.convlab .cl-sxs .cl-only-bad{background:var(--cl-del-bg);color:var(--cl-del);
 text-decoration:underline}
.convlab .cl-sxs .cl-sxs-checks{font-size:11.5px;margin-top:2px}
"""
"""A passing and a failing run side by side (convlab.notebook._side_by_side): the fork turn's
row ruled above, what only one run did tinted and underlined (never by colour alone)."""

STYLESHEET = (
    THEME_CSS
    + CSS.removeprefix(THEME_CSS)
    + TRANSCRIPT_CSS
    + TABLE_CSS.removeprefix(THEME_CSS)
    + DIFF_CSS
    + PREVIEW_CSS
    + REPORT_CSS
    + SIDE_BY_SIDE_CSS
)
"""Every rule of every view: sent once per notebook (convlab.htmlkit.bundle) and once per
standalone page, never with each view."""
