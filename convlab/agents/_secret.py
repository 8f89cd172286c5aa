"""Credentials that never show themselves, and URLs fit to show: what the HTTP agents, their
errors and the cassettes use to keep keys, passwords and query values out of every text.

The one masking rule: every secret value this process knows (`known_secrets`: each live
`Secret`'s key, header values and URL credentials, and the values of secret-named environment
variables) is replaced by `***` wherever it appears in what convlab records (`mask`), values
shorter than SHORTEST_SECRET excepted. The engine applies it to each result as it is recorded
(so the store, run.json, run.html, the card and the history's copy all hold the masked text)
and to the run's error and settings; a result says where it was masked
(`metadata["masked"]`)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
import threading
import urllib.parse
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "SHORTEST_SECRET",
    "Secret",
    "basic_credentials",
    "env_secrets",
    "header_secrets",
    "known_secrets",
    "mask",
    "safe_url",
    "url_secrets",
]

SHORTEST_SECRET = 8
"""A value shorter than this is never masked in free text. Short dummy keys (`x`, `-`,
`EMPTY`, `sk-1`) are how local servers are called; masking every `x` would garble each
recorded prompt, model and reply ("e***pense"). A field that holds the key itself is still
shown as `***` whatever its length (the history masks secret-named keys)."""

SECRET_ENV = re.compile(r"(?i)(key|token|secret|password)")
"""Environment variables whose values are secrets, masked wherever they show up."""

_LIVE: weakref.WeakSet[Secret] = weakref.WeakSet()
"""Every Secret of this process that is still in use (`known_secrets` reads them)."""
_LIVE_LOCK = threading.Lock()
"""Guards `_LIVE`: the history records runs on a thread of its own while agents are made."""


class Secret:
    """A credential that never shows itself in a repr, a str or an f-string.

    One read from the environment (`env`, e.g. OPENAI_API_KEY) is never pickled: a copy sent
    to another process (a Ray worker) reads that variable again there.
    """

    __slots__ = ("__weakref__", "_env", "_more", "_value")

    def __init__(self, value: str | None, *more: str, env: str | None = None) -> None:
        self._env = env
        self._value = value or None
        extra = {m for m in more if m}
        for item in [value or "", *more]:
            extra.update(_basic_forms(item))  # an echoed `Basic <base64>` hides as well
        extra.discard(self._value or "")
        self._more = tuple(sorted(extra, key=len, reverse=True))
        with _LIVE_LOCK:
            _LIVE.add(self)

    def values(self) -> tuple[str, ...]:
        """Every value this secret masks: the key and the extra values."""
        return tuple(v for v in (self._value, *self._more) if v)

    def hide(self, *more: str) -> None:
        """Mask `more` as well, from now on (the HTTP client adds the values of the headers
        it is given to its agent's secret: every text that masks the key masks them)."""
        extra = set(self._more) | {m for m in more if m}
        for item in more:
            extra.update(_basic_forms(item))
        extra.discard(self._value or "")
        self._more = tuple(sorted(extra, key=len, reverse=True))

    @property
    def env(self) -> str | None:
        """The environment variable the value was read from (None: it was given)."""
        return self._env

    def __reduce__(self) -> tuple[object, ...]:
        if self._env is not None:  # the value and what it implies are read again there
            more = tuple(m for m in self._more if m not in _basic_forms(self._value or ""))
            return (_from_env, (self._env, more))
        return (_given, (self._value, self._more))

    def reveal(self) -> str | None:
        """The value itself, for the one place that sends it."""
        return self._value

    def redact(self, text: str, shortest: int = SHORTEST_SECRET) -> str:
        """`text` with every occurrence of the secret (and the extra values) replaced by `***`,
        but values shorter than `shortest` (`SHORTEST_SECRET`): a key `x` leaves text intact."""
        for value in (self._value, *self._more):
            if value and len(value) >= shortest:
                text = text.replace(value, "***")
        return text

    def __bool__(self) -> bool:
        return self._value is not None

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret(None)"

    __str__ = __repr__


def env_secrets() -> list[str]:
    """The values of secret-named environment variables (SECRET_ENV), SHORTEST_SECRET long
    at least, longest first."""
    found = {v for k, v in os.environ.items() if SECRET_ENV.search(k) and len(v) >= SHORTEST_SECRET}
    return sorted(found, key=len, reverse=True)


def known_secrets() -> list[str]:
    """Every secret value this process knows, longest first (a value inside a longer one is
    masked with it): each live Secret's values and the secret environment variables', those
    shorter than SHORTEST_SECRET left out."""
    found = set(env_secrets())
    with _LIVE_LOCK:
        live = list(_LIVE)
    for secret in live:
        found.update(v for v in secret.values() if len(v) >= SHORTEST_SECRET)
    return sorted(found, key=len, reverse=True)


def mask(value: Any, secrets: Sequence[str], where: list[str] | None = None, path: str = "") -> Any:
    """`value` (JSON-like: dicts, lists, strings) with each of `secrets` replaced by `***` in
    every string, keys included; the paths of the strings that changed (`turns[0].error`)
    are added to `where`."""
    if isinstance(value, str):
        masked = value
        for secret in secrets:
            if secret in masked:
                masked = masked.replace(secret, "***")
        if masked is not value and where is not None:
            where.append(path or "(value)")
        return masked
    if isinstance(value, dict):
        return {
            mask(k, secrets): mask(v, secrets, where, f"{path}.{k}" if path else str(k))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask(v, secrets, where, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def header_secrets(headers: Mapping[str, str] | None) -> list[str]:
    """The values of the headers a user passes, whatever their names, to mask as a key is.

    Custom headers are how most credentials travel (Azure's `api-key`, `X-Api-Key`, a
    `Cookie`), and no list of names is complete, so every value counts: the whole value, the
    token after an auth scheme (`Bearer <token>`), and each part of a `;`- or `,`-separated
    value with the value of a `name=value` part (one cookie echoed alone). Parts shorter
    than 4 characters are left out, as `url_secrets` leaves out short query values (masking
    every "1" helps nobody); a whole value is kept at any length.
    """
    found: set[str] = set()
    for value in (headers or {}).values():
        value = str(value).strip()
        if not value:
            continue
        found.add(value)
        parts = {value.partition(" ")[2].strip()}
        for part in value.replace(",", ";").split(";"):
            part = part.strip()
            parts |= {part, part.partition("=")[2].strip()}
        found |= {p for p in parts if len(p) >= 4}
    return sorted(found, key=len, reverse=True)


def basic_credentials(user: str, password: str) -> list[str]:
    """The forms `user:password` takes in a Basic `Authorization` header, which servers echo:
    base64 of it in UTF-8 and Latin-1 (and JSON's `\\/` escaping), and the pair itself."""
    pair = f"{user}:{password}"
    found = {pair}
    for encoding in ("utf-8", "latin-1"):
        with contextlib.suppress(UnicodeEncodeError):
            b64 = base64.b64encode(pair.encode(encoding)).decode("ascii")
            found |= {b64, b64.rstrip("="), b64.replace("/", "\\/")}
    return sorted(found, key=len, reverse=True)


def _basic_forms(value: str) -> list[str]:
    """For a `Basic <base64>` header value: the base64 and the decoded `user:password`."""
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "basic" or not token:
        return []
    try:
        pair = base64.b64decode(token, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return [token]
    user, colon, password = pair.partition(":")
    return [token, *basic_credentials(user, password)] if colon and password else [token]


def _split(url: str) -> urllib.parse.SplitResult | None:
    try:
        return urllib.parse.urlsplit(url)
    except ValueError:
        return None


def safe_url(url: str) -> str:
    """`url` fit to show: its password dropped, every query value (and a fragment) `***`.

    Agent URLs often carry credentials (`https://user:pw@host/chat?key=...`); this is the
    form names, descriptions, results and error messages use.

    Example:
        >>> safe_url("http://me:pw@host/chat?key=abc&v")
        'http://me@host/chat?key=***&***'
    """
    parts = _split(url)
    if parts is None:
        return "<unreadable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}@{hostport}" if user else hostport
    query = "&".join(
        f"{item.partition('=')[0]}=***" if "=" in item else "***"
        for item in parts.query.split("&")
        if item
    )
    fragment = "***" if parts.fragment else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def url_secrets(url: str) -> list[str]:
    """The credentials `url` holds (its password and query values), as written and decoded,
    and the base64 of `user:password` that a Basic Authorization header carries.

    A `Secret` made with them masks them wherever a server echoes them back. Query values
    shorter than 4 characters (`v=1`) are left out: masking every "1" in an error body
    helps nobody.
    """
    parts = _split(url)
    if parts is None:
        return [url]
    found: set[str] = set()
    userinfo = parts.netloc.rpartition("@")[0]
    if ":" in userinfo:
        user, _, password = userinfo.partition(":")
        found |= {password, urllib.parse.unquote(password)}
        if password:  # sent as a Basic Authorization header, which servers may echo
            found.update(basic_credentials(user, password))
            found.update(
                basic_credentials(urllib.parse.unquote(user), urllib.parse.unquote(password))
            )
    for item in [*parts.query.split("&"), parts.fragment]:
        key, eq, value = item.partition("=")
        value = value if eq else key
        if len(value) >= 4:
            found |= {value, urllib.parse.unquote_plus(value)}
    return sorted((v for v in found if v), key=len, reverse=True)


def _from_env(env: str, more: tuple[str, ...]) -> Secret:
    """A Secret read again from this process's environment (unpickling)."""
    return Secret(os.environ.get(env), *more, env=env)


def _given(value: str | None, more: tuple[str, ...]) -> Secret:
    return Secret(value, *more)
