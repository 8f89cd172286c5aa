"""Before/after hooks per case and per run: Python callables or `module:function` names.

JSONL suites name hooks like `env_test.Before`; they are looked up next to the suite file
(and in a sibling `src/` folder, Yao's layout) as well as on the normal import path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from convlab._util import call_user, import_callable, positional_arity

__all__ = ["call_hook", "resolve_hook"]


def resolve_hook(
    spec: str | Callable[..., Any] | None, near: str | None = None
) -> Callable[..., Any] | None:
    """The callable a hook spec names (None stays None)."""
    if spec is None or callable(spec):
        return spec
    extra: list[str] = []
    if near:
        folder = Path(near).resolve().parent
        extra = [str(folder), str(folder / "src"), str(folder.parent / "src")]
    added = [p for p in extra if p not in sys.path]
    sys.path[:0] = added
    try:
        return import_callable(spec)
    finally:
        for p in added:
            sys.path.remove(p)


async def call_hook(fn: Callable[..., Any] | None, *args: Any) -> Any:
    """Call a hook with as many of `args` as it accepts, through `call_user`: an async hook
    is awaited, a sync one runs in a daemon thread (the per-case timeout can abandon it)."""
    if fn is None:
        return None
    n = positional_arity(fn)
    return await call_user(fn, *args[: len(args) if n is None else n])
