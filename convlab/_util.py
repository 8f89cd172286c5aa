"""Small helpers shared across layers: importing `module:function`, durations."""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import Callable
from typing import Any

__all__ = ["import_callable", "in_daemon_thread", "parse_duration"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: str | float | int) -> float:
    """Seconds from `90`, `"30s"`, `"2m30s"`, `"1.5h"` or `"250ms"` (Go duration syntax).

    Raises:
        ValueError: If the text is not a duration.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a duration: {value!r} (use e.g. '30s', '2m30s', '1h')")
    return total


def import_callable(spec: str) -> Callable[..., Any]:
    """Import `package.module:attr` (or `package.module.attr`) and return the callable.

    Raises:
        ImportError: If the module or attribute cannot be found, or it is not callable.
    """
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
    else:
        module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"expected 'module:function', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import module {module_name!r} for {spec!r}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise ImportError(f"{spec!r} is not callable")
    return obj  # type: ignore[no-any-return]


async def in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking callable in a daemon thread and await its result.

    Unlike `asyncio.to_thread`, a callable that never returns cannot hold up the end of
    the run or the interpreter: the per-case timeout abandons it and the process exits.
    """
    import asyncio
    import threading

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def main() -> None:
        try:
            out = fn(*args)
        except BaseException as exc:
            ok, value = False, exc
        else:
            ok, value = True, out
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=main, name="convlab-call", daemon=True).start()
    return await future
