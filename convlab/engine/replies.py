"""Reply size: a reply longer than the run's `max_reply_bytes` is cut and marked, and a long
reply's text is kept once on its turn (not again as every assertion's `actual`, whether the
check ran on the turn or on the whole case)."""

from __future__ import annotations

from collections.abc import Iterable

from convlab.model.records import AssertionResult, CaseResult, Observation, TurnResult

__all__ = ["MAX_REPLY_BYTES", "cap_reply", "share_case_text", "share_reply_text"]

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
    quarter = limit // 4  # no UTF-8 character is longer than 4 bytes
    if (obs.text is None or len(obs.text) <= quarter) and all(
        not isinstance(m.content, str) or len(m.content) <= quarter for m in obs.messages
    ):
        return  # the usual reply: nothing can be over the cap
    biggest = 0
    done: dict[int, str] = {}  # the same string object stays one object after the cut

    def cut(text: str) -> str:
        nonlocal biggest
        if id(text) in done:
            return done[id(text)]
        if len(text) <= quarter:
            return text
        short, size = _cut(text, limit)
        if short is not text:
            biggest = max(biggest, size)
        done[id(text)] = short
        return short

    if obs.text is not None and (short := cut(obs.text)) is not obs.text:
        obs.text = short
    for message in obs.messages:
        if (
            isinstance(message.content, str)
            and (short := cut(message.content)) is not message.content
        ):
            message.content = short
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
            result.actual = _pointer(text, "the reply")


def share_case_text(result: CaseResult) -> None:
    """Case-level checks (and a code case's final ones) read a turn's reply too: an `actual`
    that is one of the case's long replies keeps a preview and names the turn holding it."""
    replies = {
        t.observation.text: t.index
        for t in result.turns
        if t.observation is not None
        and t.observation.text is not None
        and len(t.observation.text) > ACTUAL_PREVIEW * 2
    }
    if not replies:
        return
    for check in _walk(result.assertions):
        actual = check.actual
        if isinstance(actual, str) and len(actual) > ACTUAL_PREVIEW * 2 and actual in replies:
            check.actual = _pointer(actual, f"turn {replies[actual] + 1}'s reply")


def _pointer(text: str, what: str) -> str:
    return (
        f"{text[:ACTUAL_PREVIEW]}… [{what}, {len(text)} characters: see the turn's "
        "observation text]"
    )
