"""Turning one thinkingbox test (a `.py` function or a YAML `test_cases` entry) into a Case.

This is thinkingbox's hydration done at load time: the scenario's world_state merged with the
test's `init`, bot instructions joined, the `$history` reference resolved, tags and limits
checked. Every problem is recorded with the file line and field path of the key at fault.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from convlab.errors import Problem
from convlab.formats._base import LineList, Problems, dotted, plain
from convlab.formats._python_dataset import (
    Dataset,
    HistoryRef,
    Scenario,
    history_messages,
    merge_world,
)
from convlab.formats._python_parse import kind_of, yaml_line
from convlab.model.assertions import PythonTest
from convlab.model.conversation import Message
from convlab.model.suite import Case, Limits, SimulatorSpec, Source

__all__ = ["TestSpec", "build_case"]

Loc = tuple[int | str, ...]
TAG_KEYS = ("labels", "category", "domain", "eval_type", "skip")
DEFAULT_USER_TURNS = 10


@dataclass
class TestSpec:
    """One test to hydrate, whatever file it came from."""

    name: str
    """Function name (`.py`) or `uid` (YAML); the case id is `<file name>:<name>`."""
    file: Path
    line: int
    config: dict[Any, Any]
    locate: Callable[[Loc], int | None]
    """File line of a config field path."""
    function: str
    """The name the test code binds the test function to."""
    code: str
    code_line: int
    metadata: dict[str, Any] = field(default_factory=dict)
    prefix: str = ""
    """Field-path prefix of this test inside its file (`test_cases[2]` in a YAML file)."""

    def where(self, loc: Loc) -> str:
        """The field path of `loc` in this test's file."""
        return dotted(loc, self.prefix)


@dataclass
class _Fields:
    """The checked config of one test."""

    scenario: str | None = None
    query: str | None = None
    user_context: str | None = None
    bot_instructions: str | None = None
    max_user_turns: int | None = DEFAULT_USER_TURNS
    max_agent_passes: int | None = None
    history: HistoryRef | None = None
    init: dict[str, Any] = field(default_factory=dict)
    format_query: bool = False
    tags: list[str] = field(default_factory=list)
    tag_info: dict[str, Any] = field(default_factory=dict)


class _Checker:
    """Reads typed values out of a test's config, recording a problem per bad key."""

    def __init__(self, spec: TestSpec, problems: Problems) -> None:
        self.spec, self.problems = spec, problems

    def fail(self, loc: Loc, message: str) -> None:
        self.problems.add(self.spec.locate(loc), self.spec.where(loc), message)

    def text(self, key: str, required: bool = False) -> str | None:
        value = self.spec.config.get(key)
        if value is None:
            if required:
                self.fail((key,), f"missing required key {key!r}")
            return None
        if not isinstance(value, str):
            self.fail((key,), f"must be text, got {kind_of(value)}")
            return None
        return value

    def count(self, key: str, default: int | None, least: int | None) -> int | None:
        """An `int` field of thinkingbox's `TestCase`, read as pydantic reads it there: `3`,
        `"3"`, `3.0` and `true` (1) are 3, 3, 3 and 1; `null`, `2.5` and `"x"` are refused.
        `least`: the field's bound (`ge`), None for none."""
        if key not in self.spec.config:
            return default
        value = self.spec.config[key]
        try:
            number = _INT.validate_python(value)
        except ValidationError:
            self.fail((key,), f"must be a whole number, got {kind_of(value)}")
            return default
        if least is not None and number < least:
            self.fail((key,), f"must be >= {least}, got {number}")
            return default
        return number

    def flag(self, key: str) -> bool:
        """A `bool` field of `TestCase`, read as pydantic reads it: `true`, `"yes"`, `"on"`,
        `"1"` and `1` are true; `null`, `2` and `"maybe"` are refused."""
        if key not in self.spec.config:
            return False
        value = self.spec.config[key]
        try:
            return _BOOL.validate_python(value)
        except ValidationError:
            self.fail((key,), f"must be true or false, got {kind_of(value)}")
            return False

    def init(self) -> dict[str, Any]:
        value = self.spec.config.get("init")
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(
                ("init",), f"must be a mapping of server name to its state, got {kind_of(value)}"
            )
            return {}
        for server, state in value.items():
            if not isinstance(server, str):
                self.fail(("init", server), f"server names must be text, got {kind_of(server)}")
            elif not isinstance(state, dict):
                self.fail(("init", server), f"must be a mapping, got {kind_of(state)}")
        return plain(value)  # type: ignore[no-any-return]

    def history(self) -> HistoryRef | None:
        value = self.spec.config.get("history")
        if value is None:
            return None
        try:
            return HistoryRef.parse(value)
        except ValueError as exc:
            self.fail(("history",), str(exc))
            return None

    def tags(self) -> tuple[list[str], dict[str, Any]]:
        """The case's tags (a list as written, or a mapping's labels) and thinkingbox's fields."""
        value = self.spec.config.get("tags")
        info: dict[str, Any] = {"labels": [], "category": [], "domain": None, "eval_type": None}
        info["skip"] = False
        if value is None:
            return [], info
        if isinstance(value, list):
            return self._tag_list(value, info), info
        if isinstance(value, dict):
            return self._tag_map(value, info), info
        self.fail(("tags",), f"must be a list of strings or a mapping, got {kind_of(value)}")
        return [], info

    def _tag_list(self, value: list[Any], info: dict[str, Any]) -> list[str]:
        for i, tag in enumerate(value):
            if not isinstance(tag, str):
                self.fail(("tags", i), f"Tags must be strings, got {kind_of(tag)}")
                continue
            low = tag.lower()
            if low.startswith("domain:"):
                info["domain"] = low[7:]
            elif low.startswith("eval:"):
                info["eval_type"] = low[5:]
            elif low.startswith("category:"):
                info["category"].append(low[9:])
            elif low == "skip":
                info["skip"] = True
            else:
                info["labels"].append(tag)
        return [t for t in value if isinstance(t, str)]

    def _tag_map(self, value: dict[Any, Any], info: dict[str, Any]) -> list[str]:
        for key, item in value.items():
            loc: Loc = ("tags", key)
            if key not in TAG_KEYS:
                self.fail(loc, f"unknown tags key {key!r} (expected one of {', '.join(TAG_KEYS)})")
            elif key in ("labels", "category"):
                ok = isinstance(item, list) and all(isinstance(t, str) for t in item)
                if not ok and item is not None:
                    self.fail(loc, "must be a list of strings")
                info[key] = list(item) if ok else []
            elif key == "skip":
                if item is not None and not isinstance(item, bool):
                    self.fail(loc, f"must be true or false, got {kind_of(item)}")
                info["skip"] = item is True
            elif item is not None and not isinstance(item, str):
                self.fail(loc, f"must be text, got {kind_of(item)}")
            else:
                info[key] = item
        return list(info["labels"])


_INT: TypeAdapter[int] = TypeAdapter(int)
_BOOL: TypeAdapter[bool] = TypeAdapter(bool)


def _fields(spec: TestSpec, problems: Problems) -> _Fields:
    check = _Checker(spec, problems)
    tags, tag_info = check.tags()
    return _Fields(
        scenario=check.text("scenario", required=True),
        query=check.text("query", required=True),
        user_context=check.text("user_context"),
        bot_instructions=check.text("bot_instructions"),
        # `max_user_sim_turns` has no bound in thinkingbox: below 0 it allows no simulated
        # user message (agent_user_loop.py `turn > max_user_sim_turns`), as 0 does
        max_user_turns=max(0, check.count("max_user_sim_turns", DEFAULT_USER_TURNS, None) or 0),
        max_agent_passes=check.count("max_agent_sim_turns", None, 0),
        history=check.history(),
        init=check.init(),
        format_query=check.flag("format_query"),
        tags=tags,
        tag_info=tag_info,
    )


def _scenario(spec: TestSpec, name: str, dataset: Dataset, problems: Problems) -> Scenario | None:
    if dataset.root is None:
        msg = "no dataset root: no folder above this file has a scenario/ folder"
        problems.add(spec.locate(("scenario",)), spec.where(("scenario",)), msg)
        return None
    scenario = dataset.scenario(name)
    if scenario is None and not dataset.scenario_path(name).is_file():
        msg = f"scenario {name!r} not found: {dataset.scenario_path(name)} does not exist"
        problems.add(spec.locate(("scenario",)), spec.where(("scenario",)), msg)
    return scenario


def _history(
    spec: TestSpec, ref: HistoryRef, dataset: Dataset, problems: Problems
) -> list[Message] | None:
    """The referenced messages; a problem at the `history:` line when they cannot be found."""
    at = ("history",)
    try:
        found = dataset.history(spec.file, ref)
    except LookupError as exc:
        problems.add(spec.locate(at), spec.where(at), f"history {ref.text}: {exc.args[0]}")
        return None
    if found is None:
        return None  # an invalid meta file: its problems are recorded in it
    meta, section = found
    raw = section[ref.key]
    if not isinstance(raw, list):
        line = yaml_line(section, (ref.key,))
        problems.items.append(
            Problem(str(meta), line, f"$history.{ref.key}", "must be a list of messages")
        )
        return []
    try:
        first, last = ref.bounds(raw)
    except ValueError as exc:
        problems.add(spec.locate(at), spec.where(at), f"history {ref.text}: {exc}")
        return []
    lines = raw.item_lines if isinstance(raw, LineList) else None
    return history_messages(raw, first, last, meta, lines, problems.items)


def _mergeable(
    spec: TestSpec, scenario: Scenario, init: dict[str, Any], problems: Problems
) -> bool:
    """Whether each server of the test's `init` merges into the scenario's world_state.

    Deliberate difference: thinkingbox merges a server the scenario configures with
    `recursive_merge`, which asserts that both are mappings, when the test runs
    (`merge_init_config` in `tb infer`), so each run of the test is a decoding error. convlab
    says so when the file loads, at the server's line (docs/thinkingbox.md).
    """
    ok = True
    for server in init:
        current = scenario.world_state.get(server)
        if current and not isinstance(current, dict):
            at = ("init", server)
            msg = (
                f"cannot be merged into scenario {scenario.name!r}, whose {server!r} is "
                f"{kind_of(current)}, not a mapping (thinkingbox's recursive_merge asserts "
                "both are mappings: every run of this test would be a decoding error there)"
            )
            problems.add(spec.locate(at), spec.where(at), msg)
            ok = False
    return ok


def build_case(spec: TestSpec, dataset: Dataset, problems: Problems) -> Case | None:
    """The Case for one test; None (with problems recorded) when something is wrong."""
    before = len(problems.items)
    f = _fields(spec, problems)
    scenario = _scenario(spec, f.scenario, dataset, problems) if f.scenario else None
    history = _history(spec, f.history, dataset, problems) if f.history else None
    if len(problems.items) > before or scenario is None or f.query is None:
        return None
    if not _mergeable(spec, scenario, f.init, problems):
        return None
    tag_info = {
        **f.tag_info,
        "labels": [*scenario.labels, *f.tag_info["labels"]],
        "domain": f.tag_info["domain"] or scenario.domain,
        # `Dataset.hydrate_test_case` builds the hydrated tags from labels, domain, category
        # and skip only: an `eval:` tag's eval_type is left null there, and here
        "eval_type": None,
        "skip": f.tag_info["skip"] or scenario.skip,
    }
    metadata: dict[str, Any] = {
        **plain(spec.metadata),
        "scenario": scenario.name,
        "test_case_file": str(spec.file),
        "test_case_name": spec.name,
        "init": f.init,
        # Deliberate difference: thinkingbox reads `format_query` into TestCase but
        # `Dataset.hydrate_test_case` does not copy it to HydratedTestCase, so the
        # `{init[...]}` placeholders are never filled there; convlab fills them (engine/modes.py)
        "format_query": f.format_query,
        "tools": copy.deepcopy(scenario.tools),  # each case owns its data
        "tags": tag_info,
    }
    if f.bot_instructions is not None:
        metadata["bot_instructions"] = f.bot_instructions
    if f.history is not None:
        metadata["history"] = f.history.as_dict()
    parts = [s for s in (scenario.bot_instructions, f.bot_instructions) if s is not None]
    skip = None
    if f.tag_info["skip"]:
        skip = "tagged skip"
    elif scenario.skip:
        # Deliberate difference: thinkingbox ORs a scenario's `skip` into the hydrated tags
        # but filters on the test's own tags before hydration (hydrator.py
        # `_iter_cases_from_file`), so a skipped scenario's tests still run there. Skipping
        # them is what the author asked for (docs/thinkingbox.md, differences table).
        skip = f"scenario {scenario.name!r} is tagged skip"
    try:
        return Case(
            id=f"{spec.file.name}:{spec.name}",
            name=spec.name,
            mode="code",
            tags=list(dict.fromkeys([*scenario.labels, *f.tags])),
            skip=skip,
            metadata=metadata,
            instructions="\n".join(parts) if parts else None,
            user_context=f.user_context,
            world=merge_world(scenario.world_state, f.init),
            limits=Limits(max_user_turns=f.max_user_turns, max_agent_passes=f.max_agent_passes),
            source=Source(file=str(spec.file), line=spec.line, format="python_tests"),
            input=[*(history or []), Message(role="user", content=f.query)],
            simulator=SimulatorSpec() if f.user_context else None,
            assertions=[
                PythonTest(
                    function=spec.function, code=spec.code, file=str(spec.file), line=spec.code_line
                )
            ],
        )
    except ValidationError as exc:
        problems.add_validation(exc, spec.line)
        return None
