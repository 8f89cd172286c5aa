"""Where an exception came from in the user's own code: `error_info` turns a caught exception
into an `ErrorInfo` record, and `from_user_code` cuts a traceback to start at the user's frame.

A frame is the user's when its file is none of these: convlab's own package, the standard
library, an installed package (site-packages, dist-packages) or frozen bootstrap code. A
notebook cell (`/tmp/ipykernel_.../123.py`, `<ipython-input-...>`), a test file or a module
of the user's project is the user's. The short traceback drops convlab's frames and those of
the machinery that carried the call to the user's code (asyncio, threading,
concurrent.futures, contextlib); a library the user's code called into keeps its frames.
"""

from __future__ import annotations

import functools
import os
import sysconfig
import traceback
from pathlib import Path
from types import TracebackType

from convlab.model.records import ErrorInfo

__all__ = [
    "CHAIN_DEPTH",
    "ERROR_BYTES",
    "MESSAGE_LIMIT",
    "capped",
    "error_info",
    "error_text",
    "from_user_code",
    "is_user_file",
    "message_of",
]

MESSAGE_LIMIT = 2_000
"""An exception's message is kept up to this many UTF-8 bytes, wherever convlab records it
(a result's `error`, an ErrorInfo's `message`, a check's message), then `… cut, N bytes`."""
ERROR_BYTES = 16_000
"""A result's `error` and an ErrorInfo's `traceback` are kept up to this many UTF-8 bytes,
then `… cut, N bytes` (N the whole text's size), as a long reply is cut to max_reply_bytes."""
CHAIN_DEPTH = 8
"""A traceback shows at most this many chained exceptions (`raise ... from`, or raised while
handling another) below the one caught; the line before it says how many more were left out."""
TRACEBACK_FRAMES = 8
"""The short traceback keeps at most this many frames per exception (the innermost ones)."""
_CARRIERS = ("asyncio", "threading.py", "concurrent", "contextlib.py")
"""Standard-library modules that only carry a call to the user's code, by their path under
the standard library."""


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


@functools.cache
def _places() -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(convlab's folder, the standard library's folders, the installed packages' folders)."""
    convlab = _norm(str(Path(__file__).resolve().parent.parent)) + os.sep
    paths = sysconfig.get_paths()
    stdlib = {_norm(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)}
    installed = {_norm(paths[k]) + os.sep for k in ("purelib", "platlib") if paths.get(k)}
    return convlab, tuple(stdlib), tuple(installed)


@functools.lru_cache(maxsize=512)
def _kind(filename: str) -> str:
    """`convlab`, `carrier` (asyncio, threading, ...), `library` or `user`."""
    if filename.startswith("<"):
        return "library" if filename.startswith("<frozen") else "user"
    path = _norm(filename)
    convlab, stdlib, installed = _places()
    if path.startswith(convlab):
        return "convlab"
    for root in stdlib:
        if path.startswith(root):
            rest = path[len(root) :]
            return "carrier" if rest.startswith(_CARRIERS) else "library"
    parts = set(Path(path).parts)
    if path.startswith(installed) or parts & {"site-packages", "dist-packages"}:
        return "library"
    return "user"


def is_user_file(filename: str) -> bool:
    """Whether code in `filename` is the user's (see the module's docstring)."""
    return _kind(filename) == "user"


def capped(text: str, limit: int) -> str:
    """`text` when it is at most `limit` UTF-8 bytes; else its first `limit` bytes (on a
    character boundary), then `… cut, N bytes` with N its whole size."""
    if len(text) * 4 <= limit:  # no character is longer than 4 bytes: the usual text
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", "ignore") + f"… cut, {len(raw):,} bytes"


def message_of(exc: BaseException) -> str:
    """`str(exc)`, capped at MESSAGE_LIMIT; an exception whose `__str__` raises or returns
    something other than text is described by its type instead, never by that second error."""
    try:
        text = str(exc)
    except Exception:  # its own __str__ raised, or returned a non-str (TypeError)
        return f"<unprintable {type(exc).__name__}: its __str__ failed>"
    return capped(text, MESSAGE_LIMIT)


def error_text(exc: BaseException) -> str:
    """`Type: message` of an exception, as results, checks and run errors say it (the
    message capped and made safe by `message_of`)."""
    message = message_of(exc)
    if isinstance(exc, TimeoutError) and not message:
        return "TimeoutError: timed out"
    return f"{type(exc).__name__}: {message}"


def _frames(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def from_user_code(tb: TracebackType | None) -> TracebackType | None:
    """`tb` from the outermost frame of the user's code on (all of it when none is theirs):
    what a re-raised exception shows, ending in the same innermost frame, so a debugger's
    post-mortem lands where it did."""
    for entry in _frames(tb):
        if is_user_file(entry.tb_frame.f_code.co_filename):
            return entry
    return tb


def _short(te: traceback.TracebackException, seen: set[int], depth: int = 0) -> int:
    """Drop convlab's and the carriers' frames from `te` and the exceptions it chains, and
    the chain past CHAIN_DEPTH; how many chained exceptions were left out is returned."""
    if id(te) in seen:
        return 0
    seen.add(id(te))
    kept = [f for f in te.stack if _kind(f.filename) not in ("convlab", "carrier")]
    te.stack = traceback.StackSummary.from_list(kept[-TRACEBACK_FRAMES:])
    if depth >= CHAIN_DEPTH:
        dropped = _chain_length(te, set())
        te.__cause__ = te.__context__ = None
        return dropped
    dropped = 0
    for chained in (te.__cause__, te.__context__):
        if chained is not None:
            dropped += _short(chained, seen, depth + 1)
    return dropped


def _chain_length(te: traceback.TracebackException, seen: set[int]) -> int:
    """How many exceptions `te` chains (not counting itself), each counted once."""
    count, todo = 0, [te.__cause__, te.__context__]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        count += 1
        todo += [item.__cause__, item.__context__]
    return count


def error_info(exc: BaseException) -> ErrorInfo:
    """The record of a caught exception: type, message, the innermost frame of the user's
    code it passed through, and the short traceback (empty when no frame was the user's)."""
    message = message_of(exc)
    name = type(exc).__name__
    where = None
    for entry in _frames(exc.__traceback__):
        code = entry.tb_frame.f_code
        if is_user_file(code.co_filename):
            where = (code.co_filename, entry.tb_lineno, code.co_name)
    if where is None:
        return ErrorInfo(type=name, message=message)
    try:
        te = traceback.TracebackException.from_exception(exc, compact=True)
        dropped = _short(te, set())
        text = "".join(te.format())
        if dropped:
            text = f"… {dropped} earlier chained exceptions left out\n\n{text}"
        text = capped(text, ERROR_BYTES)
    except Exception:  # a broken __str__ or source file: the location still stands
        text = ""
    file, line, function = where
    return ErrorInfo(
        type=name, message=message, file=file, line=line, function=function, traceback=text
    )
