"""One Yao JSONL test case (a parsed JSON object) -> a convlab Case.

Fields (Yao's agent/test types.go, loader.go and input.go; docs/yao.md): `id` and `input`
are required (`input` is optional for dynamic cases: the simulator writes the first message);
`assert` (alias `assertions`) beats `expected`; `user`/`team` go into `Case.options` beside the
case's `options`; `timeout` is a Go duration; `checkpoints` make a case dynamic (with the case's
`simulator`, else the run's). Unknown keys are problems with a did-you-mean, because Yao ignores
them and a typo such as `asert` would silently drop a case's checks."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from convlab._durations import parse_duration
from convlab._readable import json_type
from convlab.formats._base import Problems, did_you_mean
from convlab.formats._jsonl_assert import assertions_from
from convlab.formats._jsonl_dynamic import DynamicFields, shown
from convlab.model.assertions import Equals
from convlab.model.conversation import Message
from convlab.model.suite import Case, Hooks, Limits, Source

__all__ = ["CASE_KEYS", "CaseReader"]

CASE_KEYS = frozenset(
    {
        "id", "input", "name", "description", "tags", "expected", "assert", "assertions",
        "user", "team", "metadata", "options", "skip", "timeout", "before", "after",
        "simulator", "checkpoints", "max_turns",
    }
)  # fmt: skip
_CORE_KEYS = frozenset({"id", "input", "assert", "assertions", "expected"})
"""Keys read by every case; the others are looked at only when present (speed)."""
_FILE_PARTS = ("image", "audio", "file")
_STRINGS = ("name", "description", "before", "after", "user", "team")


class CaseReader(DynamicFields):
    """Reads the cases of one file; problems go to `problems` at each case's first line."""

    def __init__(self, problems: Problems, path: Path) -> None:
        self.problems = problems
        self.file = str(path)
        self.path = path
        self.line = 0

    @functools.cached_property
    def folder(self) -> Path:
        """The file's folder, where attached files are found (worked out once, when needed:
        most files attach nothing, and a folder of 10,000 files felt each `abspath`)."""
        return Path(os.path.abspath(self.path)).parent

    def read(self, obj: dict[str, Any], line: int) -> Case | None:
        """The case, or None when it has problems (all of them recorded)."""
        self.line = line
        items = self.problems.items
        before = len(items)
        keys = obj.keys()
        if not keys <= CASE_KEYS:
            self._unknown_keys(obj)
        case_id = obj.get("id")
        if type(case_id) is not str or not case_id:
            self._bad_id(case_id)
        fields: dict[str, Any] = {
            "id": case_id,
            "source": Source(file=self.file, line=line, format="jsonl"),
        }
        dynamic = obj.get("checkpoints") is not None
        if dynamic:
            fields["mode"] = "dynamic"
        raw_input = obj.get("input")
        if type(raw_input) is str:  # the common case, fast
            fields["input"] = [Message(role="user", content=raw_input)]
        elif raw_input is not None:
            fields["input"] = self._input(raw_input)
        elif not dynamic:
            self.add("input", "missing required field 'input'")
        if "assert" in keys or "assertions" in keys or "expected" in keys:
            self._assertions(obj, fields)
        if not keys <= _CORE_KEYS:
            self._optional(obj, fields, dynamic)
        if len(items) > before:
            return None
        try:
            case = Case(**fields)
        except ValidationError as exc:
            self.problems.add_validation(exc, line)
            return None
        return case

    def _unknown_keys(self, obj: dict[str, Any]) -> None:
        for key in [k for k in obj if k not in CASE_KEYS]:
            hint = did_you_mean(key, CASE_KEYS)
            if not hint:
                hint = f" (known fields: {', '.join(sorted(CASE_KEYS))})"
            self.add(key, f"unknown field {key!r}.{hint}")

    def _bad_id(self, case_id: Any) -> None:
        if case_id is None:
            self.add("id", "missing required field 'id'")
        else:
            self.add("id", f"'id' must be a non-empty string, got {shown(case_id)}")

    def _assertions(self, obj: dict[str, Any], fields: dict[str, Any]) -> None:
        key = "assert"
        if obj.get("assertions") is not None:
            if obj.get("assert") is not None:
                self.add("assertions", "give either 'assert' or 'assertions', not both")
                return
            key = "assertions"
        raw = obj.get(key)
        if raw is not None:
            fields["assertions"] = assertions_from(raw, self.problems, self.line, key)
        elif "expected" in obj and obj["expected"] is not None:
            expected = obj["expected"]
            fields["assertions"] = [
                Equals(value=expected, message="output does not match expected")
            ]

    def _optional(self, obj: dict[str, Any], fields: dict[str, Any], dynamic: bool) -> None:
        """Every field besides id, input and the assertions."""
        text = {k: self._string(obj, k) for k in _STRINGS if obj.get(k) is not None}
        for key in ("name", "description"):
            if key in text:
                fields[key] = text[key]
        if "before" in text or "after" in text:
            fields["hooks"] = Hooks(before=text.get("before"), after=text.get("after"))
        options = self._object(obj, "options")
        if options is not None or "user" in text or "team" in text:
            options = dict(options or {})
            options.update({k: text[k] for k in ("user", "team") if k in text})
            fields["options"] = options
        metadata = self._object(obj, "metadata")
        if metadata is not None:
            fields["metadata"] = metadata
        self._tags(obj, fields)
        self._skip(obj, fields)
        self._limits(obj, fields)
        self._dynamic(obj, fields, dynamic)

    def _string(self, obj: dict[str, Any], key: str) -> str | None:
        value = obj[key]
        if isinstance(value, str):
            return value
        self.add(key, f"{key!r} must be a string, got {json_type(value)}")
        return None

    def _object(self, obj: dict[str, Any], key: str) -> dict[str, Any] | None:
        value = obj.get(key)
        if value is None or isinstance(value, dict):
            return value
        self.add(key, f"{key!r} must be an object, got {json_type(value)}")
        return None

    def _tags(self, obj: dict[str, Any], fields: dict[str, Any]) -> None:
        tags = obj.get("tags")
        if tags is None:
            return
        if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
            fields["tags"] = tags
        else:
            self.add("tags", "'tags' must be a list of strings")

    def _skip(self, obj: dict[str, Any], fields: dict[str, Any]) -> None:
        skip = obj.get("skip")
        if skip is None:
            return
        if not isinstance(skip, bool):
            self.add("skip", f"'skip' must be true or false, got {json_type(skip)}")
        elif skip:
            fields["skip"] = "skip: true"

    def _limits(self, obj: dict[str, Any], fields: dict[str, Any]) -> None:
        limits: dict[str, Any] = {}
        timeout = obj.get("timeout")
        if timeout is not None:
            try:
                seconds = parse_duration(timeout)
            except (ValueError, TypeError, AttributeError):
                self.add(
                    "timeout",
                    f"invalid duration {shown(timeout)}: use a Go duration such as "
                    "'30s', '2m30s' or '1h'",
                )
            else:
                if seconds > 0:
                    limits["timeout_s"] = seconds
                else:
                    self.add("timeout", f"the timeout must be positive, got {shown(timeout)}")
        max_turns = obj.get("max_turns")
        if max_turns is not None:
            if isinstance(max_turns, int) and not isinstance(max_turns, bool) and max_turns >= 1:
                limits["max_turns"] = max_turns
            else:
                self.add("max_turns", f"'max_turns' must be a whole number >= 1, got {max_turns!r}")
        if limits:
            fields["limits"] = Limits(**limits)

    def _dynamic(self, obj: dict[str, Any], fields: dict[str, Any], dynamic: bool) -> None:
        simulator = obj.get("simulator")
        if simulator is not None:
            if not dynamic:
                self.add(
                    "simulator",
                    "a simulator needs 'checkpoints': a dynamic case ends when every "
                    "required checkpoint is reached (add checkpoints or remove the simulator)",
                )
            else:
                spec = self.simulator(simulator)
                if spec is not None:
                    fields["simulator"] = spec
        if dynamic:
            fields["checkpoints"] = self.checkpoints(obj["checkpoints"])

    # -- input -------------------------------------------------------------------------------

    def _input(self, value: Any) -> list[Message] | None:
        """string -> one user message; object -> one message; array -> messages (history)."""
        if isinstance(value, str):
            return [Message(role="user", content=value)]
        if isinstance(value, dict):
            one = self._message(value, "input")
            return [one] if one is not None else None
        if not isinstance(value, list):
            self.add(
                "input",
                "'input' must be a string, a message object or a list of messages, "
                f"got {json_type(value)}",
            )
            return None
        if not value:
            self.add("input", "'input' is an empty list: give at least one message")
            return None
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                self.add(
                    f"input[{i}]",
                    f"invalid message type at index {i}: expected an object, got {json_type(item)}",
                )
                continue
            one = self._message(item, f"input[{i}]")
            if one is not None:
                out.append(one)
        return out

    def _message(self, obj: dict[str, Any], path: str) -> Message | None:
        if "content" not in obj:
            self.add(path, "message missing 'content' field")
            return None
        content = obj["content"]
        if isinstance(content, list):
            content = self._parts(content, f"{path}.content")
        elif content is not None and not isinstance(content, str):
            self.add(
                f"{path}.content",
                f"'content' must be a string or a list of content parts, got {json_type(content)}",
            )
            return None
        if content is None and obj["content"] is not None:
            return None
        data = {**obj, "role": obj.get("role", "user"), "content": content}
        try:
            return Message.model_validate(data)
        except ValidationError as exc:
            self.problems.add_validation(exc, self.line, prefix=path)
            return None

    def _parts(self, parts: list[Any], path: str) -> list[Any] | None:
        """Content parts; `file://` sources of image/audio/file parts resolved and checked."""
        out, ok = [], True
        for i, part in enumerate(parts):
            if not isinstance(part, dict):
                self.add(f"{path}[{i}]", f"a content part must be an object, got {json_type(part)}")
                ok = False
                continue
            if part.get("type") in _FILE_PARTS:
                source = part.get("source")
                if isinstance(source, str) and source.startswith("file://"):
                    part = {**part, "source": self._file(source, f"{path}[{i}].source")}
            out.append(part)
        return out if ok else None

    def _file(self, source: str, path: str) -> str:
        raw = source[len("file://") :]
        full = Path(os.path.abspath(self.folder / raw))  # absolute paths stay as they are
        if not full.is_file():
            self.add(path, f"file not found: {full} (from {source!r})")
            return source
        return f"file://{full}"
