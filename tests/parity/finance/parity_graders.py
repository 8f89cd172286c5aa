"""Code graders of the finance suite (`type: code`), imported by HoloDeck and by convlab."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def used_a_tool(ctx: Any) -> bool:
    """Passes when the turn called a tool (HoloDeck gives single-turn graders none)."""
    return bool(ctx.tool_invocations)


def duck_typed(ctx: Any) -> Any:
    """A result that is not HoloDeck's GraderResult class, but has its fields."""
    return SimpleNamespace(score=1.0, passed=True, reason="figure looked up")
