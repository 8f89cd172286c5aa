"""One palette and one stylesheet for every view (tree, cards, tables, charts, reports).

Glyphs are plain Unicode text (no emoji): a browser or CI image without an emoji font still
draws them.
"""

from __future__ import annotations

__all__ = ["CLASS_COLORS", "CSS", "GLYPHS", "STATUS_COLORS", "VERDICT_COLORS"]

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
"""Seed 004's stability classes -> colour."""

VERDICT_COLORS = {
    "always passes": "#1a7f37",
    "flaky": "#d4a72c",
    "always fails": "#cf222e",
    "one run": "#6e7781",
}

GLYPHS = {
    "passed": "✓",
    "failed": "✗",
    "error": "!",
    "timeout": "⏱",
    "skipped": "–",
    "cancelled": "■",
    "blocked": "⊘",
    "running": "…",
}
"""Status -> a glyph that needs no emoji font."""

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
.convlab table.cl-small{border-collapse:collapse;margin:4px 0}
.convlab table.cl-small td,.convlab table.cl-small th{border-bottom:1px solid #eaeef2;
 padding:2px 8px;text-align:left;vertical-align:top}
"""
"""Inline stylesheet (no external assets), scoped under `.convlab`."""
