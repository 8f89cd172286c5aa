"""The fast, loop-bound HTTP client that network agents share.

Why not a plain `httpx.AsyncClient`: httpx's default connection pool costs about 8x the wire
time at 50 concurrent requests. `FastTransport` is an httpx transport
over aiohttp's connection pool; agents call its `request()` directly, which reads each (small,
JSON) body in one go and skips the AsyncClient machinery (auth flows, redirects, cookie jars)
and the httpx Request/Response objects that an API call does not need.
`benchmarks/bench_http.py` measures the result against raw aiohttp.

An aiohttp pool belongs to the event loop that created it, and the engine may run on a private
loop in a worker thread, so `HTTPClient` keeps one transport per running loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import functools
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx
import yarl

from convlab.agents._aimd import SHARED, AdaptiveLimit
from convlab.agents._json import dumps, loads
from convlab.agents._secret import Secret, header_secrets, safe_url, url_secrets
from convlab.agents.cache import active, http_exchange
from convlab.agents.protocol import CASE_DEADLINE, Concurrency
from convlab.errors import AgentError, AgentHTTPError, AgentTimeoutError

__all__ = [
    "FastTransport",
    "HTTPClient",
    "RawResponse",
    "Secret",
    "dumps",
    "header_secrets",
    "json_headers",
    "loads",
    "parse_retry_after",
    "queued_s",
    "safe_url",
    "url_secrets",
]

OVERLOAD_STATUSES = frozenset({429, 503})
"""Answers that mean "too many requests": they cut the adaptive in-flight limit."""

MAX_CONNECTIONS = 512
"""Per agent and loop; the engine's `parallel` is the real bound on requests in flight."""

_QUEUED: contextvars.ContextVar[float] = contextvars.ContextVar("convlab_queued", default=0.0)
"""Seconds the running task's requests waited for an adaptive-concurrency slot, summed."""

_FAILED: contextvars.ContextVar[tuple[str, bytes, bool] | None] = contextvars.ContextVar(
    "convlab_failed", default=None
)
"""The running task's last request that held a slot and failed, and whether its connection
dropped without an answer: the same one sent again is its retry, which goes before new
requests (and, after a dropped connection, takes a slot at once: `AdaptiveLimit.readmit`)."""


def queued_s() -> float:
    """Seconds the running task's requests have waited for a slot of the adaptive limit so
    far: an agent takes the difference across a turn out of its latency (the wait is the
    run's own queue, not the agent's time)."""
    return _QUEUED.get()


_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


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


@dataclass(slots=True)
class RawResponse:
    """A whole HTTP response: status, headers (case-insensitive) and body bytes."""

    status: int
    headers: Mapping[str, str]
    raw_headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    @property
    def text(self) -> str:
        """The body as text (UTF-8, undecodable bytes replaced)."""
        return self.body.decode("utf-8", "replace")


class FastTransport(httpx.AsyncBaseTransport):
    """One aiohttp connection pool, created on first use on the running loop.

    It is an httpx transport (`httpx.AsyncClient(transport=FastTransport())` works), and
    agents call `request()` directly, which skips building httpx Request/Response objects:
    about 40 us of CPU per request, measured, which matters at hundreds of requests a second.
    aiohttp errors become the matching httpx errors (a dropped connection is a ReadError, not
    the ConnectTimeout that httpx-aiohttp's generic mapping reports).
    """

    def __init__(self, max_connections: int = MAX_CONNECTIONS) -> None:
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._active = 0
        """Requests in flight: `aclose` waits for them (another run may own them)."""
        self._closing = False

    def _open(self) -> aiohttp.ClientSession:
        self._loop = asyncio.get_running_loop()
        connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0)
        trust_env = any(os.environ.get(v) for v in _PROXY_VARS)
        self._session = aiohttp.ClientSession(connector=connector, trust_env=trust_env)
        return self._session

    async def request(
        self,
        method: str,
        url: str | yarl.URL,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        body: bytes | None,
        decompress: bool = True,
        timeout: aiohttp.ClientTimeout | None = None,
    ) -> RawResponse:
        """Send one request and read its whole body (JSON APIs answer in one piece).

        `timeout` bounds the whole exchange (pool wait, connect, send, reading the body): it is
        the request's one timeout, aiohttp's own timer, with no second one around it.

        Raises:
            TimeoutError: No whole answer within `timeout`.
            httpx.ReadTimeout, httpx.ConnectError, httpx.ReadError: Transport failures.
        """
        session = self._session or self._open()
        self._active += 1
        try:
            async with session.request(
                method,
                url,
                headers=headers,
                data=body,
                allow_redirects=False,
                auto_decompress=decompress,
                timeout=timeout or session.timeout,
            ) as resp:
                data = await resp.read()
        except aiohttp.ServerTimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "read timeout") from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        except aiohttp.ClientError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
        finally:
            self._active -= 1
            if self._closing and not self._active:
                await self.aclose()
        return RawResponse(resp.status, resp.headers, resp.raw_headers, data)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """The httpx transport interface, over `request()` (httpx decodes the body)."""
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        try:
            raw = await self.request(
                request.method, str(request.url), headers, request.content or None, False
            )
        except httpx.RequestError as exc:
            exc.request = request
            raise
        return httpx.Response(
            raw.status, headers=list(raw.raw_headers), content=raw.body, request=request
        )

    async def aclose(self) -> None:
        """Close the pool (on the loop that owns it) once no request is in flight.

        Two runs gathered on one loop share the pool: the first to end must not cut the
        other's requests ("Server disconnected"), so the last of them closes it instead.
        """
        if self._active:
            self._closing = True
            return
        self._closing = False
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def discard(self) -> None:
        """Forget a pool whose event loop is already closed, without warnings."""
        session, self._session = self._session, None
        if session is not None and session.connector is not None:
            with contextlib.suppress(Exception):
                session.connector._close()

    def __del__(self) -> None:
        """An agent nobody closed (a simulator built per case, a notebook cell re-run): close
        its sockets quietly instead of letting aiohttp log "Unclosed client session"."""
        session, loop = self._session, self._loop
        if session is None or loop is None or session.closed:
            return
        if loop.is_closed():
            self.discard()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.discard)


class _Headers(tuple[tuple[str, str], ...]):
    """Request headers whose repr never shows a value (they may hold credentials)."""

    def __repr__(self) -> str:
        return f"<headers {', '.join(k for k, _ in self)}>"


class HTTPClient:
    """Posts JSON through the `FastTransport` of the running loop, raising typed agent errors.

    Errors: HTTP 429/5xx -> retryable AgentHTTPError (with `retry_after` from Retry-After);
    other 4xx -> AgentHTTPError; a connect/read failure -> retryable AgentError; no answer in
    `timeout` seconds -> AgentTimeoutError. `secret` is redacted from every error text (give
    it the URL's `url_secrets` too; the values of `headers` are added to it, whatever their
    names) and the URL is shown as `safe_url` makes it.

    With `adaptive` (the default) the requests in flight to each endpoint are held under an
    AIMD limit that 429 and 503 answers cut and successes grow back (`convlab.agents._aimd`).
    """

    def __init__(
        self,
        timeout: float = 60.0,
        secret: Secret | None = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        adaptive: bool = True,
    ) -> None:
        self.timeout = timeout
        self.adaptive = adaptive
        self.secret = secret if secret is not None else Secret(None)
        self.secret.hide(*header_secrets(headers))  # whatever their names: see header_secrets
        self.headers = _Headers(json_headers(headers, self.secret).items())
        self.max_connections = max_connections
        self._by_loop: dict[asyncio.AbstractEventLoop, FastTransport] = {}
        self._urls: dict[str, tuple[yarl.URL, str]] = {}
        self._limits: dict[tuple[asyncio.AbstractEventLoop, str], AdaptiveLimit] = {}
        self._timeout: aiohttp.ClientTimeout | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Settings only: pools and adaptive limits belong to an event loop and are made
        again where the client is used (a Ray worker); a key read from the environment is
        not sent (its `Secret` reads the variable again there)."""
        state = dict(self.__dict__, _by_loop={}, _limits={}, _timeout=None)
        if self.secret.env is not None:
            bearer = f"Bearer {self.secret.reveal()}"
            state["headers"] = _Headers((k, v) for k, v in self.headers if v != bearer)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.secret.env is not None and self.secret:
            auth = ("authorization", f"Bearer {self.secret.reveal()}")
            self.headers = _Headers((*self.headers, auth))

    def limit(self, endpoint: str) -> AdaptiveLimit:
        """The adaptive limit of `endpoint` (as `safe_url` shows it) on the running loop (or
        the one the run's workers share, when the run set `SHARED`)."""
        shared = SHARED.get()
        if shared is not None:
            gate: AdaptiveLimit = shared(endpoint)
            return gate
        key = (asyncio.get_running_loop(), endpoint)
        found = self._limits.get(key)
        if found is None:
            for old in [k for k in self._limits if k[0].is_closed()]:
                del self._limits[old]
            found = self._limits[key] = AdaptiveLimit()
        return found

    def concurrency(self) -> Concurrency | None:
        """The tightest adaptive limit on the running loop (None: no endpoint overloaded)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        mine = [(ep, lim) for (lp, ep), lim in self._limits.items() if lp is loop]
        if not any(lim.overloads for _, lim in mine):
            return None
        endpoint, tightest = min(mine, key=lambda item: item[1].limit or float("inf"))
        cuts = [lim.pause_cut for _, lim in mine if lim.pause_cut is not None]
        return Concurrency(
            endpoint,
            tightest.current,
            sum(lim.overloads for _, lim in mine),
            pause_cut=cuts[-1] if cuts else None,
            stuck=sum(lim.stuck for _, lim in mine),
            waited_s=sum(lim.waited_s for _, lim in mine),
        )

    def transport(self) -> FastTransport:
        """The transport bound to the running loop (created on first use)."""
        loop = asyncio.get_running_loop()
        found = self._by_loop.get(loop)
        if found is None:
            for old in [lp for lp in self._by_loop if lp.is_closed()]:
                self._by_loop.pop(old).discard()
            found = self._by_loop[loop] = FastTransport(self.max_connections)
        return found

    async def post(self, url: str, body: bytes) -> RawResponse:
        """POST `body`; return a response with status < 400, else raise a typed error.

        Errors name the URL as `safe_url` shows it: no password, no query values.
        """
        known = self._urls.get(url)
        if known is None:
            target = yarl.URL(url)
            if target.user is not None and any(
                k.lower() == "authorization" for k, _ in self.headers
            ):
                # aiohttp refuses both; the key's Authorization header is the one the API reads
                target = target.with_user(None)
            known = self._urls[url] = (target, safe_url(url))
        target, shown = known
        gate = self.limit(shown) if self.adaptive else None
        if gate is None:
            return await self._send(target, shown, body)
        failed = _FAILED.get()
        retry = failed is not None and failed[:2] == (shown, body)
        dropped = retry and failed is not None and failed[2]
        deadline = CASE_DEADLINE.get()
        if deadline is None:
            return await self._post_under(gate, target, shown, body, retry, dropped)
        gate.hold_to(deadline)  # no Retry-After pause outlasts this case
        try:
            return await self._post_under(gate, target, shown, body, retry, dropped)
        finally:
            gate.release_deadline(deadline)

    async def _post_under(
        self,
        gate: AdaptiveLimit,
        target: yarl.URL,
        shown: str,
        body: bytes,
        retry: bool,
        dropped: bool = False,
    ) -> RawResponse:
        """`post` within the adaptive limit: a slot, the exchange, what it says of the limit.

        The retry of a request whose connection dropped is readmitted at once (see
        `AdaptiveLimit.readmit`), so it fails as fast as it does with no limit."""
        # a free slot is taken without a coroutine or a future
        ticket = gate.readmit() if dropped else gate.try_acquire(retry)
        if ticket is None:
            loop = asyncio.get_running_loop()
            started = loop.time()
            try:
                ticket = await gate.acquire(retry)
            finally:
                _QUEUED.set(_QUEUED.get() + loop.time() - started)
        overloaded, succeeded, answered, retry_after = False, False, False, None
        lost = False  # the connection dropped (or was refused) without an answer
        try:
            response = await self._send(target, shown, body)
            succeeded = answered = True
            return response
        except AgentHTTPError as exc:
            answered = True
            succeeded = exc.status < 500  # it answered: the endpoint had room for it
            overloaded = exc.status in OVERLOAD_STATUSES
            retry_after = exc.retry_after
            raise
        except AgentTimeoutError:  # no answer in time: perhaps a busy endpoint, so it waits
            raise
        except AgentError:
            lost = True
            raise
        finally:
            gate.release(ticket, overloaded, retry_after, succeeded, answered)
            failed = not succeeded or overloaded
            if failed or retry:
                _FAILED.set((shown, body, lost) if failed else None)

    async def _send(self, target: yarl.URL, shown: str, body: bytes) -> RawResponse:
        """One exchange: a response with status < 400, else a typed error."""
        try:
            response = await self._request(target, shown, body)
        except (TimeoutError, httpx.TimeoutException):
            raise AgentTimeoutError(
                f"no answer from {shown} within {self.timeout:g} s (timeout)"
            ) from None
        except httpx.TransportError as exc:
            raise self._connection_error(shown, exc) from exc
        if response.status >= 400:
            raise AgentHTTPError(
                response.status,
                shown,
                self.secret.redact(response.body[:2000].decode("utf-8", "replace")),
                parse_retry_after(response.headers.get("retry-after")),
            )
        return response

    def _client_timeout(self) -> aiohttp.ClientTimeout:
        """`timeout` as aiohttp's total timeout (made once per value)."""
        made = self._timeout
        if made is None or made.total != self.timeout:
            made = self._timeout = aiohttp.ClientTimeout(total=self.timeout)
        return made

    async def _request(self, target: yarl.URL, shown: str, body: bytes) -> RawResponse:
        """The wire, or the run's cassette: recorded or replayed, never both.

        A replayed answer waits on nothing, so only a live exchange has a timeout.
        """
        transport, headers = self.transport(), self.headers
        if active() is None:
            return await transport.request(
                "POST", target, headers, body, timeout=self._client_timeout()
            )
        send = functools.partial(transport.request, timeout=self._client_timeout())
        query = target.raw_query_string
        got = await http_exchange(shown, body, self.secret, send, target, headers, query=query)
        return RawResponse(got[0], {"content-type": got[1]} if got[1] else {}, (), got[2])

    def _connection_error(self, url: str, exc: httpx.TransportError) -> AgentError:
        what = "could not connect to" if isinstance(exc, httpx.ConnectError) else "connection to"
        tail = "" if isinstance(exc, httpx.ConnectError) else " dropped"
        err = AgentError(f"{what} {url}{tail}: {self.secret.redact(str(exc))}")
        err.retryable = True
        return err

    async def aclose(self) -> None:
        """Close the running loop's pool and forget pools of closed loops.

        Pools of other live loops are left alone: they belong to runs still going on there
        (an `ask()` during a `start()`), which close their own pool when they end.
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for owner in [lp for lp in self._by_loop if lp is loop or lp.is_closed()]:
            transport = self._by_loop.pop(owner)
            if owner is loop:
                await transport.aclose()
            else:
                transport.discard()


def json_headers(
    extra: Mapping[str, str] | None = None, secret: Secret | None = None
) -> dict[str, str]:
    """Request headers for a JSON API call, with a bearer token when `secret` holds one."""
    headers = {"content-type": "application/json", "accept": "application/json"}
    if secret:
        headers["authorization"] = f"Bearer {secret.reveal()}"
    for key, value in (extra or {}).items():
        headers[key.lower()] = value
    return headers
