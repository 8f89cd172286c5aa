"""The status glyphs of every HTML view: plain Unicode text, no emoji (a browser or CI image
without an emoji font still draws them)."""

from __future__ import annotations

__all__ = ["GLYPHS"]

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
