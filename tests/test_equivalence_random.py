"""Randomized suites (hypothesis): every way of holding or reading back a run's results gives
the same results, field for field.

Issue 13 makes `Run.results` lazily built from lean records, builds the frames from columns
and writes compact store lines. For suites drawn at random (single-turn and scripted
multi-turn cases; every deterministic assertion kind, negated, nested; unicode texts, empty,
longer than the 256 characters of the reply-once rule, with quotes and newlines; skipped and
blocked cases; runs 1-3; a sync or async function agent that echoes, returns data, calls
tools, returns nothing or raises), each example checks:

(a) the results in memory equal, field for field, the store read back (`read_store`,
    `load_run` of the store) and the run saved and loaded again (.json for the run without
    a store, .jsonl for the one with);
(b) `df`, the other frames, `stability()` and `summary` equal the same views of a Run holding
    a plain list of the materialized results (the non-columnar path), and of the runs read
    back (`load_run` of the store: all of them; of the .json: df, stability, summary);
(c) two runs of the same suite (without and with a store) have the same results and views,
    once clocks and run ids are normalized (tests/golden.py's projection).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from golden import (
    differences,
    every_field,
    explain,
    frame_record,
    masked,
    plain,
    result_record,
    run_fields,
    suite_repetitions,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convlab as cl
from convlab.engine.store import read_store
from convlab.model import Case, Message, Suite

LONG = 300
"""Longer than the reply-once threshold (256 characters: convlab/model/conversation.py)."""

LINE_BREAKS_JSONL_SPLITS = "\x85\u2028\u2029"
"""Characters str.splitlines breaks at and JSON does not escape: a `.jsonl` run holding one
did not load back in earlier versions (analysis/io.py split the file with str.splitlines);
test_jsonl_reload_keeps_unicode_line_separators below keeps it fixed."""
CHARS = st.characters(codec="utf-8")
"""Text a file can hold: no lone surrogates (they cannot be encoded), as st.text() draws."""
SPECIAL = ["", " ", 'say "hi"', "it's", "two\nlines", "tab\there", "\\", '{"a": 1}', "ünï 😀"]
TEXT = st.one_of(
    st.text(CHARS, max_size=12),
    st.sampled_from(SPECIAL),
    st.text(CHARS, min_size=1, max_size=3).map(lambda s: (s * LONG)[: LONG + len(s)]),
)
BEHAVIOURS = ["", "", "!tool ", "!data ", "!raise ", "!none ", "!broken-tool "]
"""How the agent answers a message starting with the marker (the plain echo twice as often)."""


def answer(text: str) -> Any:
    """The agent's reply to one user message: a pure function of its text."""
    if text.startswith("!raise"):
        raise ValueError(f"refusing {text[:40]!r}")
    if text.startswith("!none"):
        return None
    if text.startswith("!data"):
        return {"n": len(text), "words": text.split()[:3], "text": text}
    if text.startswith("!tool"):
        call = cl.ToolCall("lookup", {"q": text[:20], "n": len(text)}, {"hits": len(text) % 3})
        return cl.Reply(text=f"looked up: {text}", tool_calls=[call], data={"n": len(text)})
    if text.startswith("!broken-tool"):
        call = cl.ToolCall(name="lookup", arguments=f'{{"q": {text[:10]!r}', error="bad args")
        return cl.Reply(text=text, tool_calls=[call])
    return f"echo: {text}"


def _last(messages: list[dict[str, Any]]) -> str:
    content = messages[-1].get("content")
    return content if isinstance(content, str) else ""


def sync_agent(messages: list[dict[str, Any]]) -> Any:
    return answer(_last(messages))


async def async_agent(messages: list[dict[str, Any]]) -> Any:
    return answer(_last(messages))


# --- suites ------------------------------------------------------------------------------


@st.composite
def leaf(draw: st.DrawFn, text: str) -> dict[str, Any]:
    """One assertion about the reply to `text`, likely to pass about as often as to fail."""
    start = draw(st.integers(0, max(len(text) - 1, 0)))
    piece = draw(
        st.one_of(
            st.just(text),
            st.just(text[start : start + draw(st.integers(1, 8))]),
            st.just("echo: "),
            TEXT,
        )
    )
    number = draw(st.sampled_from([len(text), 0, 7, len(text) + 1]))
    spec = draw(
        st.sampled_from(
            [
                {"kind": "contains", "value": piece},
                {"kind": "not_contains", "value": piece},
                {"kind": "equals", "value": draw(st.sampled_from([f"echo: {text}", piece]))},
                {"kind": "regex", "pattern": re.escape(piece)},
                {"kind": "regex", "pattern": draw(st.sampled_from([r"^echo: ", r"\d", "(?s).+"]))},
                {"kind": "json_path", "path": "n", "value": number},
                {"kind": "type", "value": draw(st.sampled_from(["string", "object", "number"]))},
                {"kind": "type", "path": "n", "value": "number"},
                {"kind": "tool_called", "value": draw(st.sampled_from(["lookup", "other"]))},
                {"kind": "tool_result", "tool": "lookup", "result": {"hits": number % 3}},
                {
                    "kind": "check",
                    "path": ["response", "text"],
                    "operator": "contains",
                    "value": piece,
                },
                {
                    "kind": "check",
                    "path": ["response", "data", "n"],
                    "operator": "gte",
                    "value": number,
                },
                {"kind": "check", "path": ["response", "data"], "operator": "exists"},
                {"kind": "metric", "metric": "equality", "ground_truth": f"echo: {text}"},
                {"kind": "metric", "metric": "numeric", "ground_truth": str(number)},
                {"kind": "expected_tools", "tools": [{"name": "lookup"}]},
            ]
        )
    )
    if draw(st.booleans()):
        spec["negate"] = True
    if draw(st.booleans()):
        spec["label"] = draw(TEXT)
    if draw(st.sampled_from([False, False, True])):
        spec["message"] = draw(TEXT)
    return spec


@st.composite
def assertion(draw: st.DrawFn, text: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["leaf", "leaf", "leaf", "all", "any", "not"]))
    if kind == "leaf":
        return draw(leaf(text))
    if kind == "not":
        return {"kind": "not", "assertion": draw(leaf(text))}
    return {"kind": kind, "assertions": draw(st.lists(leaf(text), min_size=1, max_size=3))}


@st.composite
def user_text(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(BEHAVIOURS)) + draw(TEXT)


@st.composite
def case(draw: st.DrawFn, index: int) -> Case:
    common: dict[str, Any] = {
        "id": f"c{index}" + draw(st.sampled_from(["", "-é", ' "q"', ":x"])),
        "skip": draw(st.sampled_from([None, None, None, None, "skipped: on purpose"])),
        "write_policy": draw(st.sampled_from([None, None, None, None, None, "external"])),
        "repetitions": draw(st.sampled_from([1, 1, 1, 2])),
    }
    if draw(st.booleans()):
        text = draw(user_text())
        history = draw(
            st.sampled_from(
                [[], [Message(content="hi"), Message(role="assistant", content="hello")]]
            )
        )
        checks = draw(st.lists(assertion(text), max_size=3))
        return Case(**common, input=[*history, Message(content=text)], assertions=checks)
    texts = draw(st.lists(user_text(), min_size=1, max_size=3))
    turns = [
        {"input": {"text": t}, "assertions": draw(st.lists(assertion(t), max_size=2))}
        for t in texts
    ]
    final = draw(st.lists(assertion(texts[-1]), max_size=2))
    return Case(**common, mode="turns", turns=turns, assertions=final)


@st.composite
def suite(draw: st.DrawFn) -> Suite:
    n = draw(st.integers(1, 4))
    return Suite(id="random", cases=[draw(case(i)) for i in range(n)])


# --- the properties ----------------------------------------------------------------------


def dumps(results: Any) -> list[dict[str, Any]]:
    """Results exactly as a user reads them: every field, nothing normalized."""
    out: list[dict[str, Any]] = plain([every_field(r) for r in results])
    return out


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["case_id"], sorted(r["variant"].items()), r["repetition"], r["run"])


def in_order(expected: list[dict[str, Any]], found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A store holds instances as they finished: put them in the run's order to compare."""
    rank = {repr(_key(r)): i for i, r in enumerate(expected)}
    return sorted(found, key=lambda r: rank.get(repr(_key(r)), len(rank)))


FRAMES = ("df", "turns_df", "assertions_df", "tool_calls_df")
"""The frames of a random run (it has no checkpoints: checkpoints_df is always empty)."""


def views(run: cl.Run, frames: tuple[str, ...] = FRAMES) -> dict[str, Any]:
    """Derived views, values as they are (clocks included: same records, same values)."""
    out: dict[str, Any] = {name: frame_record(getattr(run, name), mask=False) for name in frames}
    out["stability"] = frame_record(run.stability(), mask=False)
    out["summary"] = plain(dict(run.summary))
    return out


def normalized(run: cl.Run, raw: dict[str, Any]) -> dict[str, Any]:
    """What two runs of one suite share: results and views with clocks and ids normalized."""
    reps = suite_repetitions(run.suite)
    fields = {k: v for k, v in run_fields(run).items() if k != "settings"}
    return {
        "run": fields,
        "results": [result_record(r, run.id, reps) for r in run.results],
        **{k: masked(v) if "rows" in v else v for k, v in raw.items()},
    }


def same(expected: Any, found: Any, what: str, diffs: list[str]) -> None:
    diffs += [f"{what}: {d}" for d in differences(plain(expected), plain(found))]


def check_run(run: cl.Run, store: Path | None, folder: Path, diffs: list[str]) -> dict[str, Any]:
    """(a) and (b) for one run; returns its views for (c).

    Without a store: the plain-list Run, and the run saved as .json and loaded. With one:
    `read_store`, `load_run` of the store and the run saved as .jsonl and loaded.
    """
    results = dumps(run.results)
    raw = views(run)
    listed = msgspec.structs.replace(run, results=list(run.results))
    same(results, dumps(listed.results), "plain-list results", diffs)
    same(raw, views(listed), "plain-list views", diffs)
    if store is None:
        again = cl.load_run(run.save(folder / "run.json"))
        same(results, dumps(again.results), "saved .json results", diffs)
        same(
            raw,
            views(again, ("df",))
            | {"turns_df": raw["turns_df"]}
            | {k: raw[k] for k in FRAMES if k not in ("df",)},
            "saved .json views",
            diffs,
        )
        return raw
    _, stored = read_store(store)
    same(results, in_order(results, dumps(stored)), "read_store results", diffs)
    again = cl.load_run(store)
    same(results, in_order(results, dumps(again.results)), "load_run(store) results", diffs)
    same(raw, views(again), "load_run(store) views", diffs)
    again = cl.load_run(run.save(folder / "run.jsonl"))
    same(results, dumps(again.results), "saved .jsonl results", diffs)
    return raw


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    suite=suite(),
    runs=st.integers(1, 3),
    use_async=st.booleans(),
    max_reply_bytes=st.sampled_from([1_000_000, None, 64]),
)
def test_random_suites_read_back_and_rerun_to_the_same_results(
    suite: Suite, runs: int, use_async: bool, max_reply_bytes: int | None
) -> None:
    agent = async_agent if use_async else sync_agent
    options: dict[str, Any] = {"runs": runs, "progress": False, "max_reply_bytes": max_reply_bytes}
    diffs: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        first = cl.run(suite, agent, **options)
        store = folder / "store.jsonl"
        second = cl.run(suite, agent, store=store, **options)
        a = normalized(first, check_run(first, None, folder, diffs))
        b = normalized(second, check_run(second, store, folder, diffs))
    same(a, b, "rerun (with a store)", diffs)
    assert not diffs, explain(diffs, f"random suite of {len(suite.cases)} case(s), runs={runs}")


def test_the_random_agent_covers_every_outcome() -> None:
    """The generator is worth its time only if its suites pass, fail, error and skip."""
    texts = ["plain", "!tool x", "!data y z", "!raise", "!none", "!broken-tool q"]
    cases = [
        Case(
            id=f"c{i}",
            input=[Message(content=t)],
            assertions=[{"kind": "contains", "value": "echo"}],
        )
        for i, t in enumerate(texts)
    ]
    cases.append(Case(id="skip", input=[Message(content="x")], skip="not today"))
    cases.append(Case(id="ext", input=[Message(content="x")], write_policy="external"))
    cases.append(
        Case(
            id="long",
            input=[Message(content="y" * LONG)],
            assertions=[{"kind": "contains", "value": "y" * LONG}],
        )
    )
    run = cl.run(Suite(id="cover", cases=cases), sync_agent, progress=False)
    statuses = {r.case_id: r.status for r in run.results}
    assert statuses == {
        "c0": "passed",
        "c1": "failed",
        "c2": "failed",
        "c3": "error",
        "c4": "failed",
        "c5": "failed",
        "skip": "skipped",
        "ext": "blocked",
        "long": "passed",
    }
    [long] = [r for r in run.results if r.case_id == "long"]
    obs = long.turns[0].observation
    assert obs is not None and obs.text == "echo: " + "y" * LONG
    # what the reply-once rule of stores and saves applies to: a long text that is also
    # its message's content
    assert len(obs.text) > 256 and obs.messages[-1].content == obs.text


@pytest.mark.parametrize("char", list(LINE_BREAKS_JSONL_SPLITS))
def test_jsonl_reload_keeps_unicode_line_separators(char: str, tmp_path: Path) -> None:
    text = f"one{char}two"
    suite = Suite(id="s", cases=[Case(id="c", input=[Message(content=text)])])
    run = cl.run(suite, sync_agent, progress=False, store=tmp_path / "store.jsonl")
    for path in (tmp_path / "store.jsonl", run.save(tmp_path / "run.jsonl")):
        [again] = cl.load_run(path).results
        assert again.turns[0].observation is not None
        assert again.turns[0].observation.text == f"echo: {text}"
