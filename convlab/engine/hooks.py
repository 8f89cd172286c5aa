"""Before/after hooks per case and per run: Python callables or `module:function` names.

JSONL suites name hooks like `env_test.Before`; they are looked up next to the suite file
(and in a sibling `src/` folder, Yao's layout) as well as on the normal import path. A hook
module found beside a suite is loaded from its file under a name unique to that path, so
two suites with their own `env_test.py` each get their own, and `sys.path` is left alone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from convlab._user_code import call_user, callable_attr, import_callable, positional_arity

__all__ = ["call_hook", "resolve_hook"]

_MODULES: dict[Path, ModuleType] = {}
"""Hook modules loaded from suite folders, by resolved file path."""
_LOADING = threading.Lock()


def resolve_hook(
    spec: str | Callable[..., Any] | None, near: str | None = None
) -> Callable[..., Any] | None:
    """The callable a hook spec names (None stays None)."""
    if spec is None or callable(spec):
        return spec
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
    else:
        module_name, _, attr = spec.rpartition(".")
    found = _module_file(module_name, near) if module_name and attr and near else None
    if found is None:
        return import_callable(spec)
    return callable_attr(_load(found), attr, f"{found} (hook {spec!r})", f"hook {spec!r}")


def _module_file(module_name: str, near: str) -> Path | None:
    """The file of `module_name` beside the suite file `near` (or in a sibling `src/`)."""
    folder = Path(near).resolve().parent
    rel = Path(*module_name.split("."))
    for root in (folder, folder / "src", folder.parent / "src"):
        for candidate in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    return None


def _load(path: Path) -> ModuleType:
    """Import a hook module from its file, once per path, under a path-unique name."""
    with _LOADING:
        module = _MODULES.get(path)
        if module is not None:
            return module
        digest = hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:12]
        name = f"convlab_hooks_{digest}.{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load hook module {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            sys.modules.pop(name, None)
            raise ImportError(f"cannot import hook module {path}: {exc}") from exc
        _MODULES[path] = module
        return module


async def call_hook(fn: Callable[..., Any] | None, *args: Any) -> Any:
    """Call a hook with as many of `args` as it accepts, through `call_user`: an async hook
    is awaited, a sync one runs in a daemon thread (the per-case timeout can abandon it)."""
    if fn is None:
        return None
    n = positional_arity(fn)
    return await call_user(fn, *args[: len(args) if n is None else n])
