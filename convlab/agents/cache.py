"""Record and replay: agent, simulator and judge calls kept as small JSON files.

Why: a suite tuned in a notebook must run in CI without a key, for free, with the same
answer every time. `run(..., cache="record" | "replay" | "auto", cache_dir=...)` opens a
`Cassette`, the engine enters `recording()` for the run and for each instance, and the two
places where a call leaves the process consult it:

- `HTTPClient.post` (every HTTP and OpenAI-compatible agent, simulator and judge): the request
  is the masked URL (`safe_url`) and the JSON body, with secrets redacted; headers are never
  kept. Endpoint, model, messages, tools and parameters are all in that body.
- a Python function agent decorated with `@cached`: its messages and context in, its
  Observation and world state out.

A call's key is the SHA-256 of what it sent plus the instance's run and repetition index
(`runs=5` records five samples) and how many identical calls the instance made before it.
Identical calls within a run share one recording, so a record run and its replay always agree.
Each recording is one JSON file, `DIR/ab/abcdef....json`, readable in a diff.

Why not vcrpy, hishel or diskcache: vcrpy patches aiohttp globally and keeps one ordered
cassette per test, which parallel instances and `runs=N` repeats interleave differently on
every run; hishel implements RFC 9111 HTTP caching for httpx (POST is not cacheable there, and
the agents' fast path does not go through httpx); diskcache stores pickles in SQLite, which
no one can review in a diff. None of them can hold a function agent's turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import stat
import uuid
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from convlab.agents._cache_files import (
    _DECODER,
    _canonical,
    _json_or_text,
    _loads,
    _read_plain,
    _recorded_base,
)
from convlab.errors import ReplayMissError

__all__ = [
    "CACHE_MODES",
    "Cassette",
    "active",
    "cached",
    "calling",
    "is_cached",
    "open_cassette",
    "recording",
    "replaying",
]

CacheMode = Literal["record", "replay", "auto"]
CACHE_MODES: tuple[str, ...] = ("record", "replay", "auto")
FORMAT = 1
"""The recording file format; a file of another format is a miss, never misread."""

_MARK = "__convlab_cached__"
F = TypeVar("F", bound=Callable[..., Any])


def cached(fn: F) -> F:
    """Record and replay a Python function agent (or judge) when a run has a cache.

    HTTP and OpenAI-compatible agents are recorded without asking; a function runs as it is
    unless it opts in, since most functions are cheap and deterministic. Its messages and
    context (case id, turn, world, instructions, input) make the key; its reply and the world
    as it left it are recorded, so both must be JSON.

    Example:
        >>> import convlab as cl
        >>> @cl.cached
        ... def agent(messages):
        ...     return "hello"
        >>> cl.agents.as_agent(agent).cached
        True
    """
    try:
        setattr(fn, _MARK, True)
    except (AttributeError, TypeError):
        raise TypeError(f"@cached needs a function it can mark, got {fn!r}") from None
    return fn


def is_cached(fn: Any) -> bool:
    """Whether `fn` opted in with `@cached`."""
    return getattr(fn, _MARK, False) is True


class Cassette:
    """A folder of recordings and how this run uses it (`mode`); counts what happened."""

    def __init__(self, mode: CacheMode, folder: Path) -> None:
        self.mode, self.folder = mode, folder
        self.recorded = self.replayed = self.missed = 0
        self.unwritten = 0
        """Live answers that could not be written (kept for the run all the same)."""
        self.write_error: str | None = None
        """Why the first of them could not be written (a read-only folder, a full disk)."""
        self._seen: dict[str, dict[str, Any]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._root = os.path.join(str(folder), "")

    def path(self, key: str) -> Path:
        """Where the recording of `key` lives (fanned out by its first two characters)."""
        return Path(self._file(key))

    def _file(self, key: str) -> str:
        """`path(key)` as a string: a replay reads one file per call, and pathlib would cost
        more than the read."""
        return f"{self._root}{key[:2]}{os.sep}{key}.json"

    def summary(self) -> dict[str, Any]:
        """What the run's `settings["cache"]` shows: mode, folder and the counts (and, when
        recordings could not be written, how many and why)."""
        out: dict[str, Any] = {
            "mode": self.mode,
            "dir": str(self.folder),
            "recorded": self.recorded,
            "replayed": self.replayed,
            "missed": self.missed,
        }
        if self.unwritten:
            out |= {"unwritten": self.unwritten, "write_error": self.write_error}
        return out

    async def call(
        self,
        request: dict[str, Any],
        live: Callable[[], Awaitable[tuple[dict[str, Any], bool]]],
        miss: Callable[[str, str | None], ReplayMissError],
    ) -> dict[str, Any]:
        """The response recorded for `request` (a dict with its `key`), or the live one.

        `live()` returns (response, keep): a transient failure (429, 5xx) is passed on but
        not kept. The first identical request of a run goes live; the others wait for it.
        """
        key = request["key"]
        known = self._seen.get(key)  # answered earlier in this run
        if known is not None:
            self.replayed += 1
            return known
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # one read or live call per key; the identical ones wait for it
            found = self._seen.get(key)
            if found is not None:
                self.replayed += 1
                return found
            why = None
            if self.mode != "record":  # a file is read on a worker thread, never the loop
                found, why = await asyncio.to_thread(self._read, key, request)
                if found is not None:
                    self._seen[key] = found
                    self.replayed += 1
                    return found
            if self.mode == "replay":
                self.missed += 1
                raise miss(key, why)
            response, keep = await live()
            if keep:
                self._seen[key] = response  # the run uses it even if it cannot be kept on disk
                kept = {k: v for k, v in request.items() if k != _BASE}
                kept["request"] = _loads(request[_BASE])[1]  # what was sent, as it was
                if self._write(key, {"format": FORMAT, **kept, "response": response}):
                    self.recorded += 1
            return response

    def _read(self, key: str, request: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """The recorded response of `request`, or None and why a file there is not trusted
        (None: no file). A recording is trusted only when it is a plain file in a plain
        folder (no link, no FIFO or device, which could hang the read or lead outside the
        cache) and its format, key and request are those of this call: a recording copied
        under another call's name is not that call's answer."""
        path = self._file(key)
        try:
            data = _read_plain(path)
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            return None, f"{path} is not read: {exc.strerror or exc}"
        try:
            doc = _loads(data)
        except ValueError:
            return None, f"{path} is not JSON"
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return None, f"{path} is not a recording of format {FORMAT}"
        if doc.get("key") != key or doc.get("occurrence") != request["occurrence"]:
            return None, f"{path} records another call (its key differs)"
        if _recorded_base(doc) != request[_BASE]:
            return None, f"{path} records another call (its request differs)"
        response = doc.get("response")
        if not isinstance(response, dict):
            return None, f"{path} has no response"
        return response, None

    def _write(self, key: str, doc: dict[str, Any]) -> bool:
        """Write atomically; an unchanged recording is left alone (no churn in a diff).

        A recording that cannot be written (a read-only folder, a full disk) leaves no
        temporary file behind and costs the run nothing but the recording: False, and the
        first such failure warns (the run's `settings["cache"]` counts them all).
        """
        path = self.path(key)
        text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
        with contextlib.suppress(OSError, ValueError):
            if _read_plain(str(path)) == text.encode():
                return True
        temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not stat.S_ISDIR(os.lstat(path.parent).st_mode):  # a link leads out of the cache
                raise OSError(0, "the folder is a link, not a folder in the cache")
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temp.unlink()
            self._unwritable(path, exc)
            return False
        return True

    def _unwritable(self, path: Path, exc: OSError) -> None:
        self.unwritten += 1
        if self.write_error is not None:
            return
        why = exc.strerror or type(exc).__name__
        self.write_error = f"cannot write recording {path}: {why}"
        warnings.warn(
            f"cache: {self.write_error}; the run goes on with the live answers, unrecorded",
            RuntimeWarning,
            stacklevel=2,
        )


def open_cassette(mode: str | bool | None, folder: str | Path | None) -> Cassette | None:
    """The cassette for run()'s `cache` and `cache_dir`; None when caching is off.

    Raises:
        ValueError: For an unknown mode, or `replay` from a folder that does not exist
            (nothing to replay: a run would only fail every case).
    """
    if mode is None or mode is False:
        return None
    if mode not in CACHE_MODES:
        raise ValueError(f"cache={mode!r}: use 'record', 'replay', 'auto' or None")
    path = Path(folder if folder is not None else DEFAULT_DIR)
    if mode == "replay" and not path.is_dir():
        raise ValueError(
            f"cache='replay': {path} does not exist, so there is nothing to replay "
            "(record it first with cache='record' or cache='auto')"
        )
    return Cassette(mode, path)  # type: ignore[arg-type]


DEFAULT_DIR = "convlab-cache"
"""cache_dir when none is given: relative to the current directory."""


@dataclass
class _Scope:
    """The cassette and the instance that calls go out for (a contextvar holds it)."""

    cassette: Cassette
    case: str | None = None
    variant: str = ""
    repetition: int = 0
    run: int = 0
    turn: int = 0
    """The last agent turn (0-based), for the message of a judge's miss."""
    counts: Counter[str] = field(default_factory=Counter)

    def request(self, kind: str, sent: dict[str, Any], plain: bool = False) -> dict[str, Any]:
        """`sent` with the instance's run and repetition and its occurrence, and its key
        (`plain`: `sent` holds only what msgspec parses JSON into; see `_canonical`)."""
        base = _canonical([kind, sent, self.run, self.repetition], plain)
        occurrence = self.counts[base]
        self.counts[base] += 1
        key = hashlib.sha256(f"{FORMAT}\n{base}\n{occurrence}".encode()).hexdigest()
        return {
            "key": key,
            "kind": kind,
            "run": self.run,
            "repetition": self.repetition,
            "occurrence": occurrence,
            "request": sent,
            _BASE: base,
        }

    def miss(
        self, what: str, request: dict[str, Any]
    ) -> Callable[[str, str | None], ReplayMissError]:
        call = _CALL.get()
        role = call[0] if call else "agent"
        turn = (call[1] if call and call[1] is not None else self.turn) + 1
        case = self.case or "(suite checks)"
        sample = f", run {self.run}" if self.run else ""
        sample += f", repetition {self.repetition}" if self.repetition else ""
        variant = f" [{self.variant}]" if self.variant else ""

        def make(key: str, why: str | None = None) -> ReplayMissError:
            found = "was never recorded" if why is None else f"has no trusted recording ({why})"
            return ReplayMissError(
                f"replay: the {role} call of case {case!r}{variant}{sample} at turn {turn} "
                f"{found} ({what}; key {key[:16]}, file "
                f"{self.cassette.path(key)}): record it with cache='record' or cache='auto'",
                case=case,
                turn=turn,
                role=role,
                key=key,
            )

        return make


_BASE = "_base"
"""In a request: the canonical text its key is the hash of (as it was sent: a function's
world may change during the call). Not written: the recording's `request` is read from it."""

_SCOPE: ContextVar[_Scope | None] = ContextVar("convlab_cache_scope", default=None)
_CALL: ContextVar[tuple[str, int | None] | None] = ContextVar("convlab_cache_call", default=None)


def active() -> _Scope | None:
    """The recording scope of the running code (None: no cache, calls go live)."""
    return _SCOPE.get()


def replaying() -> bool:
    """Whether calls are answered from recordings only (a missing API key is fine then)."""
    scope = _SCOPE.get()
    return scope is not None and scope.cassette.mode == "replay"


def recording(
    cassette: Cassette | None,
    case: str | None = None,
    variant: str = "",
    repetition: int = 0,
    run: int = 0,
) -> contextlib.AbstractContextManager[None]:
    """Calls made inside go through `cassette`, keyed for this instance (no-op for None:
    every case enters it, and a generator's context costs more than the case's timeout)."""
    if cassette is None:
        return _NOTHING
    return _recording(cassette, case, variant, repetition, run)


_NOTHING = contextlib.nullcontext()


@contextlib.contextmanager
def _recording(
    cassette: Cassette, case: str | None, variant: str, repetition: int, run: int
) -> Iterator[None]:
    token = _SCOPE.set(_Scope(cassette, case, variant, repetition, run))
    try:
        yield
    finally:
        _SCOPE.reset(token)


@contextlib.contextmanager
def calling(role: str, turn: int | None) -> Iterator[None]:
    """Name the call going out (agent, simulator, judge; 0-based turn) for miss messages."""
    scope = _SCOPE.get()
    if scope is None:
        yield
        return
    if role == "agent" and turn is not None:
        scope.turn = turn
    token = _CALL.set((role, turn))
    try:
        yield
    finally:
        _CALL.reset(token)


class _Answer(Protocol):
    status: int
    headers: Mapping[str, str]
    body: bytes


class _Secret(Protocol):
    def redact(self, text: str) -> str: ...


async def http_exchange(
    url: str,
    body: bytes,
    secret: _Secret,
    send: Callable[..., Awaitable[_Answer]],
    *args: Any,
    query: str = "",
) -> tuple[int, str, bytes]:
    """A POST through the active cassette: (status, content type, body).

    `url` is already masked as `safe_url` masks it; `send("POST", *args, body)` makes the
    live call. `query` is the real URL's query: its values are masked out of `url`, yet they
    choose the answer (`?api-version=...`), so a digest of it is part of the request (and
    so of the key), never the values themselves. Secrets at least `SHORTEST_SECRET` long are
    redacted from what is kept; the live and the replayed answer are the same normalised
    body, so a replay reads exactly what its recording did.
    """
    scope = _SCOPE.get()
    assert scope is not None, "http_exchange needs a recording() scope"

    redact = secret.redact
    text = redact(body.decode("utf-8", "replace"))
    try:  # the agents' bodies are msgspec's own output: it reads them back fastest
        sent, plain = _DECODER.decode(text), True
    except ValueError:
        sent, _ = _json_or_text(text)
        plain = isinstance(sent, str)
    call = {"method": "POST", "url": url, "body": sent}
    if query:  # only then: the keys of the recordings of URLs without a query stay as they were
        call["query_sha256"] = hashlib.sha256(query.encode()).hexdigest()[:16]
    request = scope.request("http", call, plain)

    async def go() -> tuple[dict[str, Any], bool]:
        got = await send("POST", *args, body)
        keep = got.status < 400  # an error is not the answer to keep: a 401, a 429, a 500
        value, is_json = _json_or_text(redact(got.body.decode("utf-8", "replace")))
        ctype = got.headers.get("content-type", "")
        kept = {"json": value} if is_json else {"text": value}
        return {"status": got.status, "content_type": ctype, **kept}, keep

    response = await scope.cassette.call(request, go, scope.miss(f"POST {url}", request))
    if "json" in response:
        data = json.dumps(response["json"], ensure_ascii=False).encode()
    else:
        data = str(response.get("text", "")).encode()
    return int(response["status"]), str(response.get("content_type", "")), data


async def function_call(
    name: str,
    sent: dict[str, Any],
    live: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any] | None:
    """A `@cached` function's turn through the active cassette; None when there is none."""
    scope = _SCOPE.get()
    if scope is None:
        return None
    try:
        request = scope.request("function", {"function": name, **sent})
    except (TypeError, ValueError) as exc:
        raise TypeError(f"@cached {name}: its messages or context are not JSON: {exc}") from None

    async def go() -> tuple[dict[str, Any], bool]:
        return await live(), True

    return await scope.cassette.call(request, go, scope.miss(f"function {name}", request))
