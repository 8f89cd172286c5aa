"""Reply size: a reply longer than the run's `max_reply_bytes` is cut and marked, and a long
reply's text is kept once on its turn (not again as every assertion's `actual`)."""

from __future__ import annotations

from collections.abc import Iterable

from convlab.model.conversation import Observation
from convlab.model.results import AssertionResult, TurnResult

__all__ = ["MAX_REPLY_BYTES", "cap_reply", "share_reply_text"]

MAX_REPLY_BYTES = 1_000_000
"""The default cap on one reply's text (1 MB of UTF-8)."""

ACTUAL_PREVIEW = 200
"""How much of a long reply an assertion's `actual` keeps (the turn holds it whole)."""


def _cut(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to at most `limit` UTF-8 bytes (on a character boundary), and its size."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, len(raw)
    return raw[:limit].decode("utf-8", "ignore"), len(raw)


def cap_reply(obs: Observation, limit: int | None) -> None:
    """Cut the reply's text and its messages' string contents to `limit` bytes each; a cut
    is marked in `obs.truncated_from` (the largest original size). None or 0: no cap."""
    if not limit:
        return
    biggest = 0
    done: dict[int, str] = {}  # the same string object stays one object after the cut

    def cut(text: str) -> str:
        nonlocal biggest
        if id(text) in done:
            return done[id(text)]
        if len(text) <= limit // 4:  # no UTF-8 character is longer than 4 bytes
            return text
        short, size = _cut(text, limit)
        if short is not text:
            biggest = max(biggest, size)
        done[id(text)] = short
        return short

    if obs.text is not None:
        obs.text = cut(obs.text)
    for message in obs.messages:
        if isinstance(message.content, str):
            message.content = cut(message.content)
    if biggest:
        obs.truncated_from = biggest


def _walk(results: Iterable[AssertionResult]) -> Iterable[AssertionResult]:
    for result in results:
        yield result
        yield from _walk(result.children)


def share_reply_text(turn: TurnResult) -> None:
    """An assertion whose `actual` is the turn's whole (long) reply keeps a preview and a
    pointer instead: the text itself is stored once, in the turn's observation."""
    obs = turn.observation
    text = obs.text if obs is not None else None
    if text is None or len(text) <= ACTUAL_PREVIEW * 2:
        return
    for result in _walk(turn.assertions):
        actual = result.actual
        if isinstance(actual, str) and (actual is text or actual == text):
            result.actual = (
                f"{text[:ACTUAL_PREVIEW]}… [the reply, {len(text)} characters: see the "
                "turn's observation text]"
            )
