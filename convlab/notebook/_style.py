"""One palette and one stylesheet for every view (tree, cards, tables, charts, reports).

Glyphs are plain Unicode text (no emoji): a browser or CI image without an emoji font still
draws them.
"""

from __future__ import annotations

__all__ = [
    "BLAME_COLORS",
    "CHANGE_COLORS",
    "CLASS_COLORS",
    "CSS",
    "GLYPHS",
    "STABILITY_COLORS",
    "STATUS_COLORS",
    "TABLE_CSS",
    "TRANSCRIPT_CSS",
    "VERDICT_COLORS",
]

STATUS_COLORS = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "error": "#bc4c00",
    "timeout": "#8250df",
    "skipped": "#6e7781",
    "cancelled": "#6e7781",
    "blocked": "#9a6700",
    "running": "#0969da",
}
"""Status -> colour (text and bars)."""

CLASS_COLORS = {
    "stable": "#1a7f37",
    "mostly_stable": "#4d9a2c",
    "unstable": "#d4a72c",
    "highly_unstable": "#cf222e",
}
"""Yao's stability classes -> colour."""

VERDICT_COLORS = {
    "always passes": "#1a7f37",
    "flaky": "#d4a72c",
    "always fails": "#cf222e",
    "one run": "#6e7781",
}
"""`Run.stability()`'s plain-word verdict -> colour."""

STABILITY_COLORS = {
    "stable": CLASS_COLORS["stable"],
    "mostly stable": CLASS_COLORS["mostly_stable"],
    "unstable": CLASS_COLORS["unstable"],
    "highly unstable": STATUS_COLORS["error"],  # orange: red is for a case that never passes
    "always fails": VERDICT_COLORS["always fails"],
    "one run": VERDICT_COLORS["one run"],
}
"""`Run.stability()`'s `stability`, the class the views show -> colour (from the palettes above)."""

BLAME_COLORS = {
    "agent": "#cf222e",
    "simulator": "#9a6700",
    "judge": "#9a6700",
    "infrastructure": "#9a6700",
    "suite": "#9a6700",
    "hook": "#9a6700",
}
"""`Run.df`'s blame -> colour: the agent's failures red, the ones around it amber."""

CHANGE_COLORS = {
    "worse": "#cf222e",
    "better": "#1a7f37",
    "same": "#6e7781",
    "before_only": "#9a6700",
    "after_only": "#0969da",
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

CSS = """
.convlab{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;
 font-size:13px;line-height:1.45;color:#1f2328}
.convlab code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.convlab .cl-card{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:4px 0;
 max-width:100%;overflow-x:auto}
.convlab .cl-title{font-weight:600;font-size:14px;margin-bottom:4px}
.convlab .cl-counts span{margin-right:12px;white-space:nowrap}
.convlab .cl-rate{font-size:20px;font-weight:600}
.convlab .cl-muted{color:#6e7781}
.convlab .cl-bar{display:flex;height:8px;border-radius:4px;overflow:hidden;background:#eaeef2;
 margin:6px 0;max-width:480px}
.convlab .cl-bar div{height:100%}
.convlab details{margin:1px 0 1px 0}
.convlab details>summary{cursor:pointer;list-style-position:inside}
.convlab .cl-turns{margin:2px 0 4px 18px;padding:0;list-style:none}
.convlab .cl-turns li{margin:1px 0;word-break:break-word}
.convlab .cl-who{font-weight:600;color:#57606a}
.convlab .cl-fail{color:#cf222e}
.convlab .cl-ok{color:#1a7f37}
.convlab .cl-blame{color:#9a6700}
.convlab .cl-blame-agent{color:#cf222e}
.convlab table.cl-small{border-collapse:collapse;margin:4px 0;font-size:inherit}
.convlab table.cl-small td,.convlab table.cl-small th{border-bottom:1px solid #eaeef2;
 padding:2px 8px;text-align:left;vertical-align:top}
"""
"""Inline stylesheet (no external assets), scoped under `.convlab`."""

TRANSCRIPT_CSS = """
.convlab .cl-answer{max-width:880px}
.convlab .cl-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 10px;
 padding-bottom:6px;margin-bottom:6px;border-bottom:1px solid #eaeef2}
.convlab .cl-verdict{font-weight:700;letter-spacing:.04em}
.convlab .cl-msg{display:flex;flex-direction:column;align-items:flex-start;margin:6px 0}
.convlab .cl-msg.cl-user{align-items:flex-end}
.convlab .cl-role{font-size:11px;color:#57606a;margin:0 4px 1px}
.convlab .cl-bubble{white-space:pre-wrap;overflow-wrap:anywhere;padding:6px 10px;
 border-radius:10px;max-width:80%;border:1px solid #d0d7de;background:#f6f8fa}
.convlab .cl-user .cl-bubble{background:#ddf4ff;border-color:#b6e3ff}
.convlab .cl-hist{opacity:.55}
.convlab .cl-empty{font-style:italic;color:#6e7781}
.convlab .cl-tool{max-width:80%;min-width:240px;margin:2px 0;padding:3px 8px;font-size:12px;
 border:1px solid #d0d7de;border-left:3px solid #8c959f;border-radius:6px;background:#fff}
.convlab .cl-tool-name{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,
 monospace}
.convlab .cl-kv{display:grid;grid-template-columns:max-content 1fr;gap:1px 8px;
 align-items:baseline}
.convlab .cl-kv>span{color:#57606a;font-size:11px}
.convlab .cl-kv>code{justify-self:start}
.convlab pre.cl-json{margin:1px 0;padding:2px 6px;white-space:pre-wrap;overflow-wrap:anywhere;
 background:#f6f8fa;border-radius:4px;font-size:12px;max-height:24em;overflow-y:auto;
 font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.convlab .cl-extra{max-width:80%;margin:3px 0;font-size:12px}
.convlab .cl-checks{margin-top:8px;padding-top:6px;border-top:1px solid #eaeef2}
.convlab .cl-check{margin:2px 0}
.convlab .cl-mark{display:inline-block;width:1.3em;font-weight:700;text-align:center}
.convlab .cl-why{margin:1px 0 5px 1.6em;font-size:12px}
.convlab .cl-sub{margin-left:1.4em}
"""
"""The chat transcript of `convlab.ask` (bubbles, tool blocks, assertion lines)."""

TABLE_CSS = """
.convlab.cl-table{max-width:100%;overflow-x:auto;margin:4px 0;font-size:13px;
 font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif}
.convlab.cl-table table.dataTable td:not(.dt-type-numeric),
.convlab.cl-table table.dataTable th:not(.dt-type-numeric){text-align:left}
.convlab.cl-table .cl-caption{font-weight:600;margin:2px 0 4px 0}
.convlab.cl-table .cl-note{color:#9a6700;margin:2px 0 4px 0}
.convlab.cl-table .cl-desc{color:#57606a;margin:0 0 4px 0;max-width:70em}
.convlab .cl-badge{border-radius:3px;padding:0 5px;white-space:nowrap;font-weight:500}
.convlab details.cl-more>summary{cursor:pointer;list-style-position:inside;white-space:nowrap}
.convlab details.cl-more>div{white-space:pre-wrap;word-break:break-word;min-width:24em;
 max-width:70em;margin:2px 0 2px 12px;padding-left:6px;border-left:2px solid #d0d7de}
"""
"""Stylesheet shipped inside every interactive table's HTML (badges, expandable long texts).

Colours themselves are inline styles, so a page that drops `<style>` (a sanitiser) still
shows them."""
