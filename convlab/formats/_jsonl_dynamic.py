"""The dynamic-mode fields of a Yao JSONL case: `simulator` and `checkpoints`.

As Yao's agent/test/dynamic_types.go reads them.

Simulator: `{use, options: {metadata: {persona, goal, ...}, connector, ...}}` ->
SimulatorSpec(use, persona, goal, metadata=the other metadata keys, options=the other
options). Checkpoint: `{id, description?, assert | assertion, after?: [ids], required?}`
(`required` defaults to true; an `assert` list means all of them). An `after` id that names
no checkpoint is kept: Yao ignores such ids when it runs.
"""

from __future__ import annotations

from typing import Any

from convlab._readable import json_type
from convlab.formats._base import Problems, did_you_mean, short_repr
from convlab.formats._jsonl_assert import assertion_from, assertions_from
from convlab.model.assertions import All, Assertion
from convlab.model.suite import Checkpoint, SimulatorSpec

__all__ = ["DynamicFields", "shown"]

_CHECKPOINT_KEYS = ("id", "description", "assert", "assertion", "after", "required")
_SIMULATOR_KEYS = ("use", "options")


def shown(value: Any) -> str:
    """A value as a message shows it: strings quoted, others with their JSON type."""
    return (
        short_repr(value, 80)
        if isinstance(value, str)
        else f"{json_type(value)} {short_repr(value, 80)}"
    )


class DynamicFields:
    """Reads `simulator` and `checkpoints`; problems go to `problems` at `line`."""

    problems: Problems
    line: int

    def add(self, path: str, message: str) -> None:
        """Record a problem of the current case."""
        self.problems.add(self.line, path, message)

    def simulator(self, value: Any) -> SimulatorSpec | None:
        if not isinstance(value, dict):
            self.add("simulator", f"'simulator' must be an object, got {json_type(value)}")
            return None
        ok = True
        for key in [k for k in value if k not in _SIMULATOR_KEYS]:
            hint = did_you_mean(key, _SIMULATOR_KEYS)
            if key in ("persona", "goal", "metadata", "connector"):
                hint = f" Put it in simulator.options{'' if key == 'metadata' else '.metadata'}."
            self.add(f"simulator.{key}", f"unknown simulator field {key!r}.{hint}")
            ok = False
        use = value.get("use")
        if use is not None and (not isinstance(use, str) or not use):
            self.add("simulator.use", "'use' must name the simulator agent")
            ok = False
        raw = value.get("options")
        options = dict(raw) if isinstance(raw, dict) else {}
        if raw is not None and not isinstance(raw, dict):
            self.add("simulator.options", f"'options' must be an object, got {json_type(raw)}")
            ok = False
        metadata = options.pop("metadata", None)
        if metadata is not None and not isinstance(metadata, dict):
            self.add("simulator.options.metadata", "'metadata' must be an object")
            return None
        metadata = dict(metadata or {})
        persona, goal = metadata.pop("persona", None), metadata.pop("goal", None)
        for key, text in (("persona", persona), ("goal", goal)):
            if text is not None and not isinstance(text, str):
                self.add(f"simulator.options.metadata.{key}", f"{key!r} must be a string")
                ok = False
        if not ok:
            return None
        return SimulatorSpec(
            use=use, persona=persona, goal=goal, metadata=metadata, options=options
        )

    def checkpoints(self, value: Any) -> list[Checkpoint]:
        if not isinstance(value, list):
            self.add("checkpoints", f"'checkpoints' must be a list, got {json_type(value)}")
            return []
        if not value:
            self.add("checkpoints", "'checkpoints' is empty: a dynamic case needs at least one")
            return []
        out: list[Checkpoint] = []
        seen: dict[str, str] = {}
        for i, item in enumerate(value):
            path = f"checkpoints[{i}]"
            cp = self._checkpoint(item, path)
            if cp is None:
                continue
            if cp.id in seen:
                self.add(f"{path}.id", f"duplicate checkpoint id {cp.id!r} (also {seen[cp.id]})")
            seen.setdefault(cp.id, path)
            out.append(cp)
        return out

    def _checkpoint(self, obj: Any, path: str) -> Checkpoint | None:
        if not isinstance(obj, dict):
            self.add(path, f"a checkpoint must be an object, got {json_type(obj)}")
            return None
        before = len(self.problems.items)
        for key in [k for k in obj if k not in _CHECKPOINT_KEYS]:
            hint = did_you_mean(key, _CHECKPOINT_KEYS)
            self.add(f"{path}.{key}", f"unknown checkpoint field {key!r}.{hint}")
        cp_id = obj.get("id")
        if cp_id is None:
            self.add(f"{path}.id", "missing required field 'id'")
        elif not isinstance(cp_id, str) or not cp_id:
            self.add(f"{path}.id", f"'id' must be a non-empty string, got {shown(cp_id)}")
        description = obj.get("description")
        if description is not None and not isinstance(description, str):
            self.add(f"{path}.description", "'description' must be a string")
        assertion = self._checkpoint_assertion(obj, path)
        after = obj.get("after", [])
        if after is None:
            after = []
        if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
            self.add(f"{path}.after", "'after' must be a list of checkpoint ids")
        required = obj.get("required", True)
        if not isinstance(required, bool):
            self.add(f"{path}.required", f"'required' must be true or false, got {required!r}")
        if len(self.problems.items) > before:
            return None
        return Checkpoint(
            id=cp_id, description=description, assertion=assertion, after=after, required=required
        )

    def _checkpoint_assertion(self, obj: dict[str, Any], path: str) -> Assertion | None:
        key = "assertion" if obj.get("assertion") is not None else "assert"
        if obj.get("assert") is not None and obj.get("assertion") is not None:
            self.add(f"{path}.assertion", "give either 'assert' or 'assertion', not both")
            return None
        raw = obj.get(key)
        if raw is None:
            self.add(f"{path}.assert", "missing required field 'assert' (what reaches it)")
            return None
        if not isinstance(raw, list):
            return assertion_from(raw, self.problems, self.line, f"{path}.{key}")
        specs = assertions_from(raw, self.problems, self.line, f"{path}.{key}")
        if not raw:
            self.add(f"{path}.{key}", "an empty assertion list: give at least one")
            return None
        return specs[0] if len(specs) == 1 else All(assertions=specs) if specs else None
