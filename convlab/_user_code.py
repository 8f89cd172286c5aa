"""User code: finding it (`package.module:function`), reading its shape (how many
positional parameters, async or not) and calling it without blocking the event loop."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from convlab._threads import DaemonPool

__all__ = [
    "VARIADIC",
    "call_user",
    "callable_attr",
    "import_callable",
    "in_daemon_thread",
    "is_async_callable",
    "positional_arity",
]


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
    return callable_attr(module, attr, f"module {module_name!r}", repr(spec))


def callable_attr(obj: Any, attr: str, where: str, what: str) -> Callable[..., Any]:
    """`obj.a.b` for `attr` "a.b", which must be callable; ImportError naming `where`/`what`."""
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(f"{where} has no attribute {attr!r}") from None
    if not callable(obj):
        raise ImportError(f"{what} is not callable")
    return obj  # type: ignore[no-any-return]


async def in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking callable on a daemon thread (of the shared pool) and await its result.

    Unlike `asyncio.to_thread`, a callable that never returns cannot hold up the end of
    the run or the interpreter: the per-case timeout abandons it and the process exits.
    """
    return await _USER_CALLS.run(fn, *args)


VARIADIC = 1 << 30
"""What `positional_arity` answers for a callable taking `*args` (any number)."""


def positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional parameters `fn` declares: `VARIADIC` with `*args`, None if unknown.

    User callables come in several shapes (`f(messages)` or `f(messages, ctx)`, `ev(ctx)` or
    `ev(ctx, parameters)`); this is how convlab decides which arguments to pass.
    """
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return VARIADIC
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def is_async_callable(fn: Any) -> bool:
    """Whether calling `fn` gives a coroutine: an async function, or an object with an
    async `__call__`."""
    import inspect

    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


async def call_user(fn: Callable[..., Any], *args: Any) -> Any:
    """Call user code (an agent, simulator, script, grader, evaluator) without blocking the loop.

    An async callable is awaited; a sync one runs on a reused daemon thread (`in_daemon_thread`), so
    one that blocks neither stalls the other cases in flight nor, once its case timed out,
    keeps the run from ending. An awaitable a sync callable returns is awaited too.
    """
    import inspect

    if is_async_callable(fn):
        return await fn(*args)
    value = await in_daemon_thread(fn, *args)
    return await value if inspect.isawaitable(value) else value


_USER_CALLS = DaemonPool("convlab-user")
"""The threads sync hooks, tools and graders run on: reused from call to call (a thread
start cost more than a case), never joined, each leaving after `IDLE_S` without work."""
