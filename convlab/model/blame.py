"""Blame: whose fault an instance that did not pass is, decided where the failure happened.

A run at `runs=10` needs to say whether a failure is the agent's or something around it, so
that only the agent's failures count against the agent's pass rate. The six classes:

- `agent`: the reply failed a check, or the agent raised;
- `simulator`: the user simulator failed or broke its contract;
- `judge`: the judge failed, returned something unparseable, or none is configured;
- `infrastructure`: a timeout, a connection error, a 429 or 5xx after retries, a store error;
- `suite`: a check that cannot be evaluated (a bad path, a bad regex at run time, a crashing
  test or grader);
- `hook`: a before or after hook failed.

The rule, in `blame_of`: the code that catches a failure knows which call failed (the agent,
the simulator, the judge, a hook, a check) and passes that `site`; the exception itself may
overrule it with a class attribute `blame` (a replay miss says `infrastructure`), and
timeouts, dropped connections and retryable HTTP statuses are `infrastructure` wherever they
happen. Error text is never parsed. Across a whole instance `case_blame` adds one more rule: a
check the reply definitively failed makes it the agent's, whatever else went wrong, because
the instance could not have passed.

Only instances that ran to a verdict and did not pass (`failed`, `error`, `timeout`) get a
blame; passed, skipped, blocked and cancelled ones have none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from convlab.errors import AgentError

if TYPE_CHECKING:
    from convlab.model.records import AssertionResult, CaseResult

__all__ = [
    "BLAMED_STATUSES",
    "BLAMES",
    "JUDGE_KINDS",
    "Blame",
    "assertion_blame",
    "blame_of",
    "blame_text",
    "case_blame",
    "count_by_blame",
    "is_infrastructure",
]

Blame = Literal["agent", "simulator", "judge", "infrastructure", "suite", "hook"]
BLAMES: tuple[Blame, ...] = get_args(Blame)
"""Every blame class, the agent's first."""
BLAMED_STATUSES = frozenset({"failed", "error", "timeout"})
"""Statuses that ran to a verdict other than a pass: the only ones with a blame."""
JUDGE_KINDS = frozenset({"judge", "agent", "metric"})
"""Assertion kinds whose errors come from the judge (used only to infer old saved runs)."""

_INFRA_TYPES = frozenset(
    {
        # well-known client libraries' transport errors, by class name so that none of them
        # has to be installed: httpx, requests/urllib3, aiohttp and the openai SDK
        "TransportError",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "TimeoutException",
        "ClientConnectionError",
        "ServerDisconnectedError",
        "ProtocolError",
        "APIConnectionError",
        "APITimeoutError",
    }
)


def _status_code(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (`status_code`, `status`, `response.status_code`)."""
    for owner in (exc, getattr(exc, "response", None)):
        for name in ("status_code", "status"):
            value = getattr(owner, name, None)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def is_infrastructure(exc: BaseException) -> bool:
    """A timeout, a connection error, or a 429/5xx answer: the network's fault, not a party's."""
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    if isinstance(exc, AgentError) and exc.retryable:  # 429, 5xx, dropped connection
        return True
    status = _status_code(exc)
    if status is not None and (status == 429 or status >= 500):
        return True
    return any(cls.__name__ in _INFRA_TYPES for cls in type(exc).__mro__)


def blame_of(exc: BaseException, site: Blame) -> Blame:
    """Whose fault `exc` is, when it was raised by the call at `site`.

    An exception's own `blame` attribute (a str naming a class) wins; otherwise timeouts,
    connection errors and 429/5xx are `infrastructure`; otherwise it is the site's.
    """
    for raised in (exc, exc.__cause__):  # a wrapper keeps what it wraps said
        own = getattr(raised, "blame", None)
        if isinstance(own, str) and own in BLAMES:
            return own
    return "infrastructure" if is_infrastructure(exc) else site


def assertion_blame(a: AssertionResult) -> Blame | None:
    """An assertion's blame: `agent` when it failed, its recorded blame when it errored
    (inferred from its kind for results saved before blame existed), None otherwise."""
    if a.status == "failed":  # a fail is the reply's, unless the check says otherwise
        return a.blame or "agent"
    if a.status != "error":
        return None
    if a.blame is not None:
        return a.blame
    for child in a.children:
        found = assertion_blame(child)
        if found is not None and found != "agent":
            return found
    return "judge" if a.kind in JUDGE_KINDS else "suite"


def _failed_check(r: CaseResult) -> bool:
    """Whether the reply definitively failed a check or a required checkpoint.

    A failed check that names another culprit (Yao's `use` without `agents:` fails, as Yao
    does, but the suite is at fault) is not the reply's.
    """
    every = [a for t in r.turns for a in t.assertions] + list(r.assertions)
    failed = [a for a in every if a.status == "failed"]
    if failed:
        return any(a.blame in (None, "agent") for a in failed)
    return r.status == "failed"


def case_blame(r: CaseResult, cause: Blame | None = None) -> Blame | None:
    """The blame of a whole instance: None unless it failed, errored or timed out.

    `cause` is what stopped it, as the engine classified it (None when the checks alone
    decided). A check the reply failed makes it `agent`; else the cause; else the first
    errored check's blame; else `infrastructure` for a timeout; else `agent`.
    """
    if r.status not in BLAMED_STATUSES:
        return None
    if _failed_check(r):
        return "agent"
    if cause is not None:
        return cause
    if r.blame is not None:
        return r.blame
    if r.status == "timeout":
        return "infrastructure"
    every = [a for t in r.turns for a in t.assertions] + list(r.assertions)
    for a in every:
        found = assertion_blame(a)
        if found is not None:
            return found
    return "agent"


def count_by_blame(statuses: Sequence[str], blames: Sequence[Any] | None) -> dict[str, int]:
    """How many non-pass instances each class is blamed for (every class, zeros included);
    without blames (a frame built by hand) every failure is the agent's."""
    counts: dict[str, int] = dict.fromkeys(BLAMES, 0)
    for n, status in enumerate(statuses):
        if status in BLAMED_STATUSES:
            blame = blames[n] if blames is not None else None
            key = blame if isinstance(blame, str) else "agent"
            counts[key] = counts.get(key, 0) + 1
    return counts


_RANK: dict[str, int] = {b: i for i, b in enumerate(BLAMES)}


def blame_text(counts: Mapping[str, int]) -> str:
    """`judge 1, infrastructure 2`: the non-zero counts, in BLAMES' order."""
    if not counts:  # a case that always passed (a summary asks once per case)
        return ""
    ordered = sorted(counts, key=lambda b: (_RANK.get(b, len(_RANK)), b))
    return ", ".join(f"{b} {counts[b]}" for b in ordered if counts[b])
