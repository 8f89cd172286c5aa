"""The fast, loop-bound HTTP client that network agents share.

Why not a plain `httpx.AsyncClient`: httpx's default connection pool costs about 8x the wire
time at 50 concurrent requests (DESIGN.md, "HTTP"). Requests here are still `httpx.Request` /
`httpx.Response` objects, but they travel through `FastTransport`, an httpx transport over
aiohttp's connection pool that reads each (small, JSON) body in one go, and they skip the
AsyncClient machinery (auth flows, redirects, cookie jars) that an API call never uses.
`benchmarks/bench_http.py` measures the result against raw aiohttp.

An aiohttp pool belongs to the event loop that created it, and the engine may run on a private
loop in a worker thread, so `HTTPClient` keeps one transport per running loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import os
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import httpx

from convlab.errors import AgentError, AgentHTTPError, AgentTimeoutError

__all__ = [
    "FastTransport",
    "HTTPClient",
    "Secret",
    "dumps",
    "json_headers",
    "loads",
    "parse_retry_after",
]

MAX_CONNECTIONS = 512
"""Per agent and loop; the engine's `parallel` is the real bound on requests in flight."""

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

try:
    import orjson

    def dumps(obj: Any) -> bytes:
        """JSON bytes (orjson when installed: it is several times faster)."""
        return orjson.dumps(obj, default=str)

    def loads(data: bytes | str) -> Any:
        """Parse JSON bytes or text."""
        return orjson.loads(data)

except ImportError:  # pragma: no cover - orjson is optional

    def dumps(obj: Any) -> bytes:
        """JSON bytes (orjson when installed: it is several times faster)."""
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str).encode()

    def loads(data: bytes | str) -> Any:
        """Parse JSON bytes or text."""
        return json.loads(data)


class Secret:
    """A credential that never shows itself in a repr, a str or an f-string."""

    __slots__ = ("_more", "_value")

    def __init__(self, value: str | None, *more: str) -> None:
        self._value = value or None
        self._more = tuple(m for m in more if m)

    def reveal(self) -> str | None:
        """The value itself, for the one place that sends it."""
        return self._value

    def redact(self, text: str) -> str:
        """`text` with every occurrence of the secret (and the extra values) replaced by `***`."""
        for value in (self._value, *self._more):
            if value:
                text = text.replace(value, "***")
        return text

    def __bool__(self) -> bool:
        return self._value is not None

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret(None)"

    __str__ = __repr__


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class FastTransport(httpx.AsyncBaseTransport):
    """An httpx transport over one aiohttp connection pool, created on first use.

    aiohttp errors become the matching httpx errors (a dropped connection is a ReadError, not
    the ConnectTimeout that httpx-aiohttp's generic mapping reports).
    """

    def __init__(self, max_connections: int = MAX_CONNECTIONS) -> None:
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0)
        trust_env = any(os.environ.get(v) for v in _PROXY_VARS)
        self._session = aiohttp.ClientSession(connector=connector, trust_env=trust_env)
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request and read its whole body (JSON APIs answer in one piece)."""
        session = self._session or self._open()
        try:
            async with session.request(
                request.method,
                str(request.url),
                headers=[
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                ],
                data=request.content or None,
                allow_redirects=False,
                auto_decompress=False,
            ) as resp:
                body = await resp.read()
        except aiohttp.ServerTimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "read timeout", request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except aiohttp.ClientError as exc:
            reason = str(exc) or type(exc).__name__
            raise httpx.ReadError(reason, request=request) from exc
        return httpx.Response(resp.status, headers=resp.raw_headers, content=body, request=request)

    async def aclose(self) -> None:
        """Close the pool (on the loop that owns it)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def discard(self) -> None:
        """Forget a pool whose event loop is already closed, without warnings."""
        session, self._session = self._session, None
        if session is not None and session.connector is not None:
            with contextlib.suppress(Exception):
                session.connector._close()


class HTTPClient:
    """Posts JSON through a `FastTransport` of the running loop, raising typed agent errors.

    Errors: HTTP 429/5xx -> retryable AgentHTTPError (with `retry_after` from Retry-After);
    other 4xx -> AgentHTTPError; a connect/read failure -> retryable AgentError; no answer in
    `timeout` seconds -> AgentTimeoutError. `secret` is redacted from every error text.
    """

    def __init__(
        self,
        timeout: float = 60.0,
        secret: Secret | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.timeout = timeout
        self.secret = secret if secret is not None else Secret(None)
        self.max_connections = max_connections
        self._by_loop: dict[asyncio.AbstractEventLoop, FastTransport] = {}

    def transport(self) -> FastTransport:
        """The transport bound to the running loop (created on first use)."""
        loop = asyncio.get_running_loop()
        found = self._by_loop.get(loop)
        if found is None:
            for old in [lp for lp in self._by_loop if lp.is_closed()]:
                self._by_loop.pop(old).discard()
            found = self._by_loop[loop] = FastTransport(self.max_connections)
        return found

    async def post(self, url: httpx.URL, body: bytes, headers: httpx.Headers) -> httpx.Response:
        """POST `body`; return a response with status < 400, else raise a typed error."""
        request = httpx.Request("POST", url, headers=headers, content=body)
        try:
            async with asyncio.timeout(self.timeout):
                response = await self.transport().handle_async_request(request)
        except (TimeoutError, httpx.TimeoutException):
            raise AgentTimeoutError(
                f"no answer from {url} within {self.timeout:g} s (timeout)"
            ) from None
        except httpx.TransportError as exc:
            raise self._connection_error(url, exc) from exc
        if response.status_code >= 400:
            raise AgentHTTPError(
                response.status_code,
                str(url),
                self.secret.redact(response.text[:2000]),
                parse_retry_after(response.headers.get("retry-after")),
            )
        return response

    def _connection_error(self, url: httpx.URL, exc: httpx.TransportError) -> AgentError:
        what = "could not connect to" if isinstance(exc, httpx.ConnectError) else "connection to"
        tail = "" if isinstance(exc, httpx.ConnectError) else " dropped"
        err = AgentError(f"{what} {url}{tail}: {self.secret.redact(str(exc))}")
        err.retryable = True
        return err

    async def aclose(self) -> None:
        """Close this loop's pool; forget pools of closed loops, ask live ones to close."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        pools, self._by_loop = self._by_loop, {}
        for owner, transport in pools.items():
            if owner is loop:
                await transport.aclose()
            elif owner.is_closed():
                transport.discard()
            else:
                asyncio.run_coroutine_threadsafe(transport.aclose(), owner)


def json_headers(
    extra: Mapping[str, str] | None = None, secret: Secret | None = None
) -> httpx.Headers:
    """Request headers for a JSON API call, with a bearer token when `secret` holds one."""
    headers = httpx.Headers({"content-type": "application/json", "accept": "application/json"})
    if secret:
        headers["authorization"] = f"Bearer {secret.reveal()}"
    if extra:
        headers.update(extra)
    return headers
