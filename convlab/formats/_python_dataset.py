"""A thinkingbox dataset folder: test-file resolution, scenarios, `.meta.yaml` histories, merging.

Layout: `<root>/scenario/<name>.yaml` (world_state, tools, bot_instructions, tags) and
`<root>/test_case/[<prefix>/]<file>` (test files), with `<stem>.meta.yaml` beside a test file
holding `$history` conversations (thinkingbox's common/hydrator.py and config_types.py).
Scenario and meta files are data: they are read here, through the test files, and never loaded
as suites themselves."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from convlab.errors import Problem
from convlab.formats._base import Problems, plain, yaml_with_lines
from convlab.formats._python_parse import kind_of, yaml_line
from convlab.model.conversation import Message

__all__ = [
    "Dataset",
    "HistoryRef",
    "Scenario",
    "find_root",
    "history_messages",
    "is_label",
    "merge_world",
    "meta_file_for",
    "recursive_merge",
    "resolve_test_file",
    "test_file_candidates",
]


def _ancestors(path: Path) -> Iterator[Path]:
    """Folders above `path`, nearest first: as written, then beyond the working directory."""
    seen: set[Path] = set()
    for folder in (path.parent, *path.parent.parents, *path.absolute().parent.parents):
        key = folder.absolute()
        if key not in seen:
            seen.add(key)
            yield folder


def find_root(path: Path) -> Path | None:
    """The dataset root of a test or list file: the nearest folder above it with `scenario/`.

    A folder holding `dataset/scenario/` also counts (its `dataset/` is the root), so a test
    list kept beside the data, as thinkingbox-data's `releases/*/testlist_*.yaml`, finds it.
    """
    for folder in _ancestors(path):
        if (folder / "scenario").is_dir():
            return folder
        if (folder / "dataset" / "scenario").is_dir():
            return folder / "dataset"
    return None


def test_file_candidates(root: Path, name: str) -> list[Path]:
    """Where `name` may live: `test_case/<name>`, then `test_case/<prefix>/<name>` for each
    `_`-joined prefix of the name, longest first (one subfolder level only, as thinkingbox's
    test-case format says)."""
    base = root / "test_case"
    parts = name.split("_")
    return [base / name] + [base / "_".join(parts[:k]) / name for k in range(len(parts) - 1, 0, -1)]


def resolve_test_file(root: Path, name: str) -> Path:
    """The test file named `name` (e.g. `my_test_case.py`) in the dataset at `root`.

    Raises:
        FileNotFoundError: When no candidate exists; the message lists every place tried.
    """
    if not name or name in (".", "..") or Path(name).name != name or "\\" in name:
        raise FileNotFoundError(f"test file {name!r} must be a file name, not a path")
    candidates = test_file_candidates(root, name)
    for path in candidates:
        if path.is_file():
            return path
    tried = ", ".join(str(p.relative_to(root)) for p in candidates)
    raise FileNotFoundError(f"test file {name!r} not found in {root} (tried {tried})")


def recursive_merge(a: Any, b: Any) -> Any:
    """Merge `b` into a deep copy of `a`: dicts recurse, lists concatenate, else `b` wins."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = {k: copy.deepcopy(v) for k, v in a.items()}
        for key, value in b.items():
            out[key] = recursive_merge(out[key], value) if key in out else copy.deepcopy(value)
        return out
    if isinstance(a, list) and isinstance(b, list):
        return copy.deepcopy(a) + copy.deepcopy(b)
    return copy.deepcopy(b)


def merge_world(world_state: dict[str, Any], init: dict[str, Any]) -> dict[str, Any]:
    """A scenario's world_state with a test's `init` merged in, per top-level server key.

    A server the scenario configures (a truthy value) is merged recursively; otherwise the
    test's value replaces it (thinkingbox's `merge_init_config`).
    """
    out = copy.deepcopy(world_state)
    for server, value in init.items():
        current = out.get(server)
        out[server] = recursive_merge(current, value) if current else copy.deepcopy(value)
    return out


@dataclass(frozen=True)
class HistoryRef:
    """A `history: "key:start:end"` reference into the `$history` of a `.meta.yaml` file."""

    key: str
    start: int | str
    """A list index, or the `message_id` of the first message."""
    end: str
    """The `message_id` of the first message NOT included, or "" for the end of the list."""

    @classmethod
    def parse(cls, value: Any) -> HistoryRef:
        """Read `"key:start:end"` (split from the right) or a `{key, start, end}` mapping."""
        if isinstance(value, dict):
            key, start, end = value.get("key"), value.get("start", 0), value.get("end", "")
        elif isinstance(value, str):
            parts = value.rsplit(":", 2)
            if len(parts) != 3:
                raise ValueError(
                    f"history ref must have exactly 3 colon-separated parts 'key:start:end', "
                    f"got: {value!r}"
                )
            key, start, end = parts
            start = _index_or_id(start)
        else:
            raise ValueError(f"history must be a 'key:start:end' string, got {kind_of(value)}")
        if not isinstance(key, str) or not key:
            raise ValueError(f"history ref key must not be empty: {value!r}")
        if isinstance(start, bool) or not isinstance(start, int | str) or not isinstance(end, str):
            raise ValueError(f"history ref start must be an index or a message_id: {value!r}")
        return cls(key, start, end)

    def as_dict(self) -> dict[str, Any]:
        """The reference as plain data (kept in the case's metadata)."""
        return {"key": self.key, "start": self.start, "end": self.end}

    @property
    def text(self) -> str:
        """The reference as written: `key:start:end`."""
        return f"{self.key}:{self.start}:{self.end}"

    def bounds(self, messages: list[Any]) -> tuple[int, int]:
        """Start and end index of the referenced slice (ValueError when it does not exist)."""
        if isinstance(self.start, int):
            if not 0 <= self.start <= len(messages):
                raise ValueError(
                    f"start index {self.start} is out of range for a list of {len(messages)}"
                )
            first = self.start
        else:
            first = _message_index(messages, self.start)
        last = len(messages) if self.end == "" else _message_index(messages, self.end)
        if last <= first and self.end != "":
            raise ValueError(f"end message_id {self.end!r} is not after the start ({first})")
        return first, last


def _index_or_id(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text  # a message_id


def _message_index(messages: list[Any], message_id: str) -> int:
    for i, msg in enumerate(messages):
        if isinstance(msg, dict) and msg.get("message_id") == message_id:
            return i
    ids = [m.get("message_id") for m in messages if isinstance(m, dict) and "message_id" in m]
    raise ValueError(f"message_id {message_id!r} not found (available: {ids})")


@dataclass
class Scenario:
    """One `scenario/<name>.yaml`, checked."""

    name: str
    file: Path
    world_state: dict[str, Any]
    tools: list[Any]
    bot_instructions: str | None
    labels: list[str] = field(default_factory=list)
    domain: str | None = None
    skip: bool = False


@dataclass
class Dataset:
    """Reads scenario and meta files of one dataset once per load, reporting each problem once."""

    root: Path | None
    """None when no folder above the test file holds `scenario/` (every scenario is missing)."""
    problems: list[Problem] = field(default_factory=list)
    _scenarios: dict[str, Scenario | None] = field(default_factory=dict)
    _metas: dict[Path, tuple[Path, Any] | None] = field(default_factory=dict)

    def scenario_path(self, name: str) -> Path:
        """Where scenario `name` is read from."""
        return (self.root or Path()) / "scenario" / f"{name}.yaml"

    def scenario(self, name: str) -> Scenario | None:
        """The scenario, or None when it is missing (the caller reports) or invalid (reported)."""
        if name not in self._scenarios:
            self._scenarios[name] = self._read_scenario(name)
        return self._scenarios[name]

    def _read_scenario(self, name: str) -> Scenario | None:
        path = self.scenario_path(name)
        if self.root is None or not path.is_file():
            return None
        problems = Problems(str(path))
        data = _read_yaml(path, problems)
        unread = data is None and problems  # not YAML; other problems leave data to check
        scenario = None if unread else _check_scenario(name, path, data, problems)
        self.problems.extend(problems)
        return scenario

    def history(self, test_file: Path, ref: HistoryRef) -> tuple[Path, Any] | None:
        """The meta file beside `test_file` and its `$history` mapping, which holds `ref.key`.

        None when the meta file is invalid (its own problems are recorded). A reference that
        cannot be resolved fails in thinkingbox (KeyError), so it is a problem here too.

        Raises:
            LookupError: Naming what is missing: the meta file, or the key in it.
        """
        meta = meta_file_for(test_file)
        if meta not in self._metas:
            self._metas[meta] = self._read_meta(meta)
        found = self._metas[meta]
        if found is None:
            if meta.is_file():
                return None
            raise LookupError(f"history file {meta} does not exist (it holds the $history)")
        if ref.key not in found[1]:
            keys = ", ".join(map(str, found[1])) or "none"
            raise LookupError(f"key {ref.key!r} is not in the $history of {meta} (keys: {keys})")
        return found

    def _read_meta(self, meta: Path) -> tuple[Path, Any] | None:
        if not meta.is_file():
            return None
        problems = Problems(str(meta))
        data = _read_yaml(meta, problems)
        section = data.get("$history") if isinstance(data, dict) else None
        if data is not None and not isinstance(data, dict):
            problems.add(1, "", "a .meta.yaml file must be a mapping")
        elif section is not None and not isinstance(section, dict):
            problems.add(yaml_line(data, ("$history",)), "$history", "must be a mapping")
        self.problems.extend(problems)
        if problems:
            return None
        # thinkingbox's MetaFile.load (common/history_loader.py) skips groups whose key starts
        # with `#` (commented out) and groups with no messages: they cannot be referenced
        kept = copy.copy(section) if section else {}  # a LineDict keeps its key lines
        for key in [k for k, v in kept.items() if str(k).startswith("#") or v is None]:
            del kept[key]
        return (meta, kept)


def meta_file_for(test_file: Path) -> Path:
    """The `.meta.yaml` of a test file, as thinkingbox's `MetaFile.load_for_test_file` names
    it: `with_suffix("").with_suffix(".meta.yaml")`, so `name.v2.py` reads `name.meta.yaml`
    (the last two suffixes are replaced, not just `.py`). Kept: it is thinkingbox's rule, and a
    versioned copy of a test file shares its histories with the original."""
    return test_file.with_suffix("").with_suffix(".meta.yaml")


def _read_yaml(path: Path, problems: Problems) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        problems.add(None, "", f"cannot read: {exc}")
        return None
    try:
        return yaml_with_lines(text, problems)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        problems.add(None, "", f"invalid YAML: {exc}")
        return None


def _check_scenario(name: str, path: Path, data: Any, problems: Problems) -> Scenario | None:
    if not isinstance(data, dict):
        problems.add(1, "", f"a scenario must be a mapping, got {kind_of(data)}")
        return None
    world, tools = data.get("world_state"), data.get("tools")
    instructions, tags = data.get("bot_instructions"), data.get("tags")
    if not isinstance(world, dict):
        problems.add(yaml_line(data, ("world_state",)), "world_state", "must be a mapping")
    else:
        for server in world:
            if not isinstance(server, str):
                loc = ("world_state", server)
                problems.add(yaml_line(data, loc), f"world_state.{server}", "server names are text")
    if not isinstance(tools, list):
        problems.add(yaml_line(data, ("tools",)), "tools", "must be a list of tools")
    else:
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                problems.add(yaml_line(data, ("tools", i)), f"tools[{i}]", "needs a 'name'")
    if instructions is not None and not isinstance(instructions, str):
        problems.add(yaml_line(data, ("bot_instructions",)), "bot_instructions", "must be text")
    labels, domain, skip = _scenario_tags(tags, data, problems)
    if problems:
        return None
    assert isinstance(world, dict) and isinstance(tools, list)
    return Scenario(name, path, plain(world), plain(tools), instructions, labels, domain, skip)


TAG_PREFIXES = ("domain:", "eval:", "category:")
"""Tag prefixes thinkingbox reads into fields of their own (any case)."""


def is_label(tag: str) -> bool:
    """thinkingbox keeps as a label every tag that is not `skip` nor has a field's prefix
    (`team:billing` stays a label)."""
    low = tag.lower()
    return low != "skip" and not low.startswith(TAG_PREFIXES)


def _scenario_tags(tags: Any, data: Any, problems: Problems) -> tuple[list[str], str | None, bool]:
    if tags is None:
        return [], None, False
    if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
        labels = [t for t in tags if is_label(t)]
        domains = [t[7:].lower() for t in tags if t.lower().startswith("domain:")]
        return labels, (domains[-1] if domains else None), any(t.lower() == "skip" for t in tags)
    if isinstance(tags, dict):
        labels = tags.get("labels") or []
        domain = tags.get("domain")
        if isinstance(labels, list) and all(isinstance(t, str) for t in labels):
            return list(labels), domain if isinstance(domain, str) else None, bool(tags.get("skip"))
    problems.add(yaml_line(data, ("tags",)), "tags", "must be a list of strings or a mapping")
    return [], None, False


def history_messages(
    raw: list[Any],
    first: int,
    last: int,
    meta: Path,
    lines: list[int] | None,
    problems: list[Problem],
) -> list[Message]:
    """Messages `first:last` of a `$history` entry (thinkingbox `T: Text | ToolCall |
    ParallelToolCall | ToolResponse`) as OpenAI-style messages; reasoning (`metadata.tag:
    think`) is kept, as thinkingbox keeps it."""
    out: list[Message] = []
    for i in range(first, last):
        try:
            out.extend(_to_messages(raw[i]))
        except (ValueError, TypeError) as exc:
            line = lines[i] if lines and i < len(lines) else None
            problems.append(Problem(str(meta), line, f"$history[{i}]", str(exc)))
    return out


def _to_messages(msg: Any) -> list[Message]:
    if not isinstance(msg, dict):
        raise ValueError(f"a history message must be a mapping, got {kind_of(msg)}")
    kind = msg.get("T", "Text")
    if kind == "Text":
        role, content = msg.get("role"), msg.get("content")
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise ValueError("a Text message needs role (system/user/assistant) and content")
        # a `think` message (metadata.tag: think) stays in the history, as in thinkingbox's
        # `parse_messages`; its chat-completions session (aoai_session.py `_encode_message`)
        # sends it to the model as a plain message of its role, and so does convlab
        return [Message(role=role, content=content)]
    if kind in ("ToolCall", "ParallelToolCall"):
        calls = msg.get("tool_calls") if kind == "ParallelToolCall" else [msg]
        if not isinstance(calls, list):
            raise ValueError("a ParallelToolCall needs a list of tool_calls")
        return [Message(role="assistant", content=None, tool_calls=[_call(c) for c in calls])]
    if kind == "ToolResponse":
        name, content = msg.get("name"), msg.get("content")
        if not isinstance(name, str) or not isinstance(content, str):
            raise ValueError("a ToolResponse needs a name and a text content")
        call_id = str(msg.get("id", ""))
        return [Message(role="tool", name=name, content=content, tool_call_id=call_id)]
    raise ValueError(f"unknown history message type T: {kind!r}")


def _call(call: Any) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ValueError("a tool call needs a name")
    args = call.get("arguments", {})
    if not isinstance(args, dict):
        raise ValueError("tool call arguments must be a mapping")
    return {
        "id": str(call.get("id", "")),
        "type": "function",
        "function": {"name": call["name"], "arguments": json.dumps(plain(args), default=str)},
    }
