"""What a run sends to its workers, made and checked before any instance starts.

Everything an instance needs besides its place in the plan travels once per run, as one
cloudpickle: the agent, the simulator, the judges, the suite (its cases' hooks with it), the
custom evaluators, the retry policy and the prices, plus the driver's working directory and
import path. Functions and classes defined in a notebook travel by value, and so do those of
a user's own modules (files outside the installed packages), which the workers may not have.

convlab's HTTP and OpenAI agents hold settings only: their connection pools and adaptive
limits belong to an event loop and are rebuilt on each worker, and a key read from the
environment (OPENAI_API_KEY) is read again there rather than sent. Anything else that
cannot be pickled (a client, a lock, an open file) is refused here with an `ExecutorError`
naming the attribute that holds it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import sysconfig
import types
from collections.abc import Iterator
from typing import Any

from convlab.engine.conversation import Env
from convlab.engine.runner import Runner, Settings
from convlab.errors import ExecutorError
from convlab.model.suite import Suite

__all__ = ["LEFT_OUT", "adaptive", "driver_version", "payload", "unpack"]

LEFT_OUT = ("emit", "listening", "simulators", "borrowed", "cassette", "limit_seen", "run_id")
"""Env fields that do not travel: the worker makes its own (the suite travels as its JSON)."""


def driver_version() -> str:
    """The convlab version of this process (each worker must run the same)."""
    version: str = sys.modules["convlab"].__version__  # the package is loaded: we are in it
    return version


def payload(runner: Runner) -> bytes:
    """The run as its workers need it, pickled; an `ExecutorError` names what cannot be."""
    from ray import cloudpickle

    from convlab.model.assertions import EVALUATORS

    env = runner.env
    parts: dict[str, Any] = {
        f.name: getattr(env, f.name)
        for f in dataclasses.fields(Env)
        if f.name not in (*LEFT_OUT, "suite")
    }
    settings = dataclasses.replace(runner.settings, before=None, after=None, store=None)
    cassette = env.cassette
    doc = {
        "env": parts,
        "settings": settings,
        "evaluators": EVALUATORS.entries(),
        "cache": (cassette.mode, cassette.folder) if cassette is not None else None,
        "suite": _suite_json(env.suite),
        "cwd": os.getcwd(),
        "path": list(sys.path),
        "version": driver_version(),
    }
    modules = _user_modules(doc)
    for module in modules:
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
    try:
        return bytes(cloudpickle.dumps(doc))  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise _refusal(doc, exc) from None
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)  # type: ignore[no-untyped-call]


def adaptive(runner: Runner) -> bool:
    """Whether the run calls an endpoint under an adaptive limit (an HTTP or OpenAI agent,
    simulator or judge with `adaptive` on): then its workers share one limit per endpoint."""
    from convlab.agents._transport import HTTPClient

    env = runner.env
    parts = [env.agent, getattr(env, "simulator", None), getattr(env, "judge", None)]
    parts.append(getattr(env, "judges", None))
    return any(
        isinstance(value, HTTPClient) and value.adaptive for _, value in _walk(parts, "", 0, set())
    )


def unpack(data: bytes) -> tuple[dict[str, Any], Settings, dict[str, Any]]:
    """A worker's view of `payload`: the Env's fields, the Settings and the rest."""
    import pickle

    doc: dict[str, Any] = pickle.loads(data)
    env, suite = doc.pop("env"), doc.pop("suite")
    env["suite"] = Suite.model_validate_json(suite) if isinstance(suite, bytes) else suite
    return env, doc.pop("settings"), doc


def _suite_json(suite: Suite) -> bytes | Suite:
    """The suite as its JSON (a suite is data, and pydantic writes JSON far faster than
    pickle copies models), or the suite itself when something in it is not JSON."""
    try:
        return suite.model_dump_json().encode()
    except Exception:  # a value JSON has no type for: pickled as it is
        return suite


# -- whose code travels by value ----------------------------------------------------------


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {sys.prefix, sys.base_prefix, sys.exec_prefix}
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


def _user_modules(doc: dict[str, Any]) -> list[types.ModuleType]:
    """The user's own modules whose functions or classes the payload holds (not convlab,
    not installed packages, not `__main__`, which cloudpickle sends by value anyway)."""
    found: dict[str, types.ModuleType] = {}
    code = {k: v for k, v in doc.items() if k != "suite"}  # the suite is data
    code["env"] = {k: v for k, v in doc["env"].items() if k != "suite"}
    for _, value in _walk(code, "", 0, set()):
        name = getattr(value, "__module__", None)
        if not isinstance(name, str) or name in found or name == "__main__":
            continue
        top = name.partition(".")[0]
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if module is None or top == "convlab" or not file:
            continue
        if not os.path.realpath(file).startswith(_installed_roots()):
            found[name] = module
    return list(found.values())


def _walk(value: Any, path: str, depth: int, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """`value` and what it holds (attributes, items, closures), with their paths."""
    if id(value) in seen or depth > 6:
        return
    seen.add(id(value))
    yield path, value
    for name, child in _children(value):
        yield from _walk(child, path + name, depth + 1, seen)


def _children(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, str | bytes | int | float | bool | type(None) | types.ModuleType):
        return
    if isinstance(value, dict):
        for key, item in list(value.items())[:200]:
            yield f"[{key!r}]", item
        return
    if isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(list(value)[:200]):
            yield f"[{i}]", item
        return
    if isinstance(value, types.MethodType):
        yield ".__self__", value.__self__
        yield "", value.__func__
        return
    if isinstance(value, functools.partial):
        yield ".func", value.func
        yield from ((f".args[{i}]", a) for i, a in enumerate(value.args))
        yield from ((f".keywords[{k!r}]", a) for k, a in value.keywords.items())
        return
    if isinstance(value, types.FunctionType):
        code = value.__code__
        for name, cell in zip(code.co_freevars, value.__closure__ or (), strict=False):
            try:
                yield f" closes over `{name}`", cell.cell_contents
            except ValueError:  # an empty cell
                continue
        if value.__module__ == "__main__" or value.__module__ not in sys.modules:
            for name in code.co_names:
                if name in value.__globals__:
                    yield f" uses the global `{name}`", value.__globals__[name]
        yield from ((f" default {i}", d) for i, d in enumerate(value.__defaults__ or ()))
        return
    if isinstance(value, type):
        return
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        for key, item in state.items():
            if key == "fn" and callable(item):  # a function agent: name the function
                name = getattr(item, "__qualname__", None) or type(item).__qualname__
                yield f"`{name}`", item
            else:
                yield f".{key}", item
    for slot in getattr(type(value), "__slots__", ()):
        if isinstance(slot, str) and hasattr(value, slot):
            yield f".{slot}", getattr(value, slot)


# -- naming what cannot travel --------------------------------------------------------------

_ROLES = {
    "['env']['agent']": "the agent",
    "['env']['simulator']": "the simulator",
    "['env']['judge']": "the judge",
    "['env']['judges']": "the judges",
    "['suite']": "the suite",
    "['evaluators']": "the custom evaluators",
}


def _refusal(doc: dict[str, Any], exc: Exception) -> ExecutorError:
    """The error that names the attribute of `doc` holding what cannot be pickled: the
    outermost object, below the agent's own wrappers, that fails (an httpx client, a lock)."""
    from ray import cloudpickle

    def fails(value: Any) -> Exception | None:
        try:
            cloudpickle.dumps(value)  # type: ignore[no-untyped-call]
        except Exception as err:
            return err
        return None

    path, culprit, why = "", doc, exc
    seen: set[int] = set()
    while _opened(culprit):
        for name, child in _children(culprit):
            if id(child) in seen:
                continue
            seen.add(id(child))
            err = fails(child)
            if err is not None:
                path, culprit, why = path + name, child, err
                break
        else:
            break
    kind = type(culprit)
    return ExecutorError(
        f"cannot send {_shown(path)} to the Ray workers: that value (type {kind.__module__}."
        f"{kind.__qualname__}) cannot be pickled ({type(why).__name__}: {why}). Make it "
        "where the agent runs instead: pass a factory (a function that builds the client on "
        "its first call, on the worker), or use cl.agents.openai(...) / cl.agents.http(...), "
        "which travel as settings and open their connections on each worker"
    )


def _opened(value: Any) -> bool:
    """Whether to look inside `value` for the culprit: containers, functions and objects of
    convlab's or the user's own classes; not those of installed packages (an httpx client
    is the culprit itself, not its lock)."""
    if isinstance(value, dict | list | tuple | set | frozenset | functools.partial):
        return True
    if isinstance(value, types.FunctionType | types.MethodType):
        return True
    module = type(value).__module__
    if module == "__main__" or module.partition(".")[0] == "convlab":
        return True
    file = getattr(sys.modules.get(module), "__file__", None)
    return isinstance(file, str) and not os.path.realpath(file).startswith(_installed_roots())


def _shown(path: str) -> str:
    """A payload path as a reader names it: `the agent (ask → client, a variable ...)`."""
    for prefix, role in _ROLES.items():
        if path.startswith(prefix):
            rest = path[len(prefix) :].lstrip(".")
            return f"{role} ({rest.strip()})" if rest else role
    return path or "the run"
