"""The one model every format loads into: Suite, Case (four modes), Turn, Variant, Checkpoint.

Loaders turn files into these; nothing downstream knows which format a case came from.
A native YAML/JSON form (`Suite.to_yaml()`, `Suite.to_json()`) round-trips losslessly.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from convlab.model.assertions import Assertion
from convlab.model.conversation import Message

__all__ = [
    "Case",
    "Checkpoint",
    "Defaults",
    "FileRef",
    "Hooks",
    "Limits",
    "Selection",
    "SimulatorSpec",
    "Source",
    "Suite",
    "Turn",
    "TurnInput",
    "Variant",
]

Mode = Literal["standard", "turns", "dynamic", "code"]
NATIVE_TAG = "convlab_suite"
"""Top-level key that marks a file in convlab's native form (its value is the version)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Model):
    """Where something was read from."""

    file: str
    line: int | None = None
    format: str = "native"

    def __str__(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}"


class Selection(_Model):
    """A structured choice: exactly one of option index, label or id (seed 001)."""

    option_index: int | None = Field(default=None, ge=0)
    option_label: str | None = None
    option_id: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Selection:
        given = [v for v in (self.option_index, self.option_label, self.option_id) if v is not None]
        if len(given) != 1:
            raise ValueError("a selection needs exactly one of optionIndex, optionLabel, optionId")
        return self

    def pick(self, options: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The option this selection picks (seed 001: an index, or exactly one label/id match).

        Raises:
            SelectionError: EVALUATION_SELECTION_UNAVAILABLE or EVALUATION_SELECTION_AMBIGUOUS.
        """
        from convlab.errors import SelectionError

        if not options:
            raise SelectionError(
                "EVALUATION_SELECTION_UNAVAILABLE: there is no open choice to select from"
            )
        if self.option_index is not None:
            if self.option_index >= len(options):
                raise SelectionError(
                    f"EVALUATION_SELECTION_UNAVAILABLE: optionIndex {self.option_index} is out "
                    f"of range ({len(options)} option(s))"
                )
            return dict(options[self.option_index])
        key, wanted = (
            ("label", self.option_label)
            if self.option_label is not None
            else ("id", self.option_id)
        )
        hits = [o for o in options if isinstance(o, dict) and o.get(key) == wanted]
        if not hits:
            raise SelectionError(
                f"EVALUATION_SELECTION_UNAVAILABLE: no option with {key} {wanted!r}"
            )
        if len(hits) > 1:
            raise SelectionError(
                f"EVALUATION_SELECTION_AMBIGUOUS: {len(hits)} options have {key} {wanted!r}"
            )
        return dict(hits[0])


class FileRef(_Model):
    """A file attached to a turn; `path` is resolved against the suite file at load."""

    path: str
    type: str | None = None
    description: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class TurnInput(_Model):
    """What the user sends in one scripted turn."""

    text: str = ""
    selection: Selection | None = None
    files: list[FileRef] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    """Other input keys, passed to the agent unchanged (adapter-defined inputs)."""


class Variant(_Model):
    """An alternative complete input for a step (a Cartesian product across steps)."""

    id: str
    input: TurnInput


class Turn(_Model):
    """One scripted user turn with its own assertions."""

    id: str | None = None
    """Step id (JSON suites); None elsewhere."""
    input: TurnInput
    assertions: list[Assertion] = Field(default_factory=list)
    variants: list[Variant] = Field(default_factory=list)
    ground_truth: str | None = None
    retrieval_context: list[str] | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    """Free per-turn settings (HoloDeck `turn_config`) surfaced to code graders."""


class Checkpoint(_Model):
    """A point a dynamic conversation must reach (after the `after` ones)."""

    id: str
    description: str | None = None
    assertion: Assertion | None = None
    after: list[str] = Field(default_factory=list)
    required: bool = True


class SimulatorSpec(_Model):
    """Who plays the user in dynamic and code-test cases."""

    use: str | None = None
    """Agent spec of the simulator; None means the run's simulator."""
    persona: str | None = None
    goal: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)


class Limits(_Model):
    """Bounds on one case instance."""

    max_turns: int | None = Field(default=None, ge=1)
    """Dynamic mode: most simulator turns (default 20)."""
    max_user_turns: int | None = Field(default=None, ge=0)
    """Code tests: most simulated user messages after the query (default 10)."""
    max_agent_passes: int | None = Field(default=None, ge=0)
    """Most agent decode passes per user message (None = unlimited)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Per-instance timeout; None means the run's timeout."""


class Hooks(_Model):
    """Callables (`module:function` or a format's own names) run around a case."""

    before: str | None = None
    after: str | None = None


class Case(_Model):
    """One conversation test, in one of four modes."""

    id: str
    name: str | None = None
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    skip: str | None = None
    """Why the case is skipped (recorded as skipped, never run); None runs it."""
    write_policy: Literal["read_only", "external"] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    mode: Mode = "standard"
    instructions: str | None = None
    """Bot instructions (system prompt additions)."""
    user_context: str | None = None
    """Extra instructions for the user simulator."""
    world: dict[str, Any] = Field(default_factory=dict)
    """Initial world state (after `init` merging), copied per instance."""
    limits: Limits = Field(default_factory=Limits)
    hooks: Hooks = Field(default_factory=Hooks)
    options: dict[str, Any] = Field(default_factory=dict)
    """Agent options passed through (JSONL `options`, `user`, `team`)."""
    repetitions: int = Field(default=1, ge=1)
    source: Source | None = None

    input: list[Message] | None = None
    """Standard/dynamic/code: the first messages (a history is allowed)."""
    assertions: list[Assertion] = Field(default_factory=list)
    """Standard: checks on the reply. Turns: final checks. Code: the test function."""
    turns: list[Turn] = Field(default_factory=list)
    simulator: SimulatorSpec | None = None
    checkpoints: list[Checkpoint] = Field(default_factory=list)

    @model_validator(mode="after")
    def _mode_fields(self) -> Case:
        if self.mode == "turns" and not self.turns:
            raise ValueError("a 'turns' case needs at least one turn")
        if self.mode == "standard" and self.input is None:
            raise ValueError("a 'standard' case needs an input")
        if self.mode == "dynamic" and not self.checkpoints:
            raise ValueError("a 'dynamic' case needs checkpoints")
        return self

    @property
    def n_turns(self) -> int:
        """Number of scripted user turns (dynamic cases have none scripted)."""
        if self.mode == "turns":
            return len(self.turns)
        return 0 if self.mode == "dynamic" else 1

    @property
    def n_assertions(self) -> int:
        """Assertions at every scope of this case (turns, final, checkpoints)."""
        turn_level = sum(len(t.assertions) for t in self.turns)
        return (
            len(self.assertions)
            + turn_level
            + sum(cp.assertion is not None for cp in self.checkpoints)
        )

    def _repr_html_(self) -> str:
        from convlab.notebook.display import case_html

        return case_html(self)

    def __str__(self) -> str:
        from convlab.notebook.display import case_text

        return case_text(self)


class Defaults(_Model):
    """Suite-wide settings the loaders folded into the cases (kept for reference)."""

    scenario: str | None = None
    world: dict[str, Any] = Field(default_factory=dict)
    instructions: str | None = None


class Suite(_Model):
    """A set of cases loaded from one file or a folder of files."""

    id: str
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    defaults: Defaults = Field(default_factory=Defaults)
    cases: list[Case] = Field(default_factory=list)
    assertions: list[Assertion] = Field(default_factory=list)
    """Suite-scope assertions (evaluated on the run's summary and cases)."""
    sources: list[Source] = Field(default_factory=list)

    @property
    def df(self) -> Any:
        """One row per case: case_id, name, mode, turns, assertions, tags, source, ..."""
        from convlab.analysis.frames import suite_frame

        return suite_frame(self)

    def filter(self, run: str | None = None, tags: str | list[str] | None = None) -> Suite:
        """Cases whose id matches the regex `run` (searched, unanchored) and share a tag."""
        import re

        pattern = re.compile(run) if run else None
        wanted = {tags} if isinstance(tags, str) else set(tags or ())
        kept = [
            c
            for c in self.cases
            if (pattern is None or pattern.search(c.id)) and (not wanted or wanted & set(c.tags))
        ]
        return self.model_copy(update={"cases": kept})

    def case(self, case_id: str) -> Case:
        """The case with this id."""
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError(case_id)

    def to_dict(self) -> dict[str, Any]:
        """The native form as plain data (what to_yaml/to_json write)."""
        return {NATIVE_TAG: 1, **self.model_dump(mode="json", exclude_defaults=True)}

    def to_json(self, indent: int | None = 2) -> str:
        """The native JSON form; `convlab.load()` reads it back."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_yaml(self) -> str:
        """The native YAML form; `convlab.load()` reads it back."""
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def table(self) -> Any:
        """An interactive table of the cases (sortable, searchable; works offline)."""
        from convlab.notebook.tables import suite_table

        return suite_table(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from convlab.notebook.display import suite_bundle

        return suite_bundle(self)

    def __str__(self) -> str:
        from convlab.notebook.display import suite_text

        return suite_text(self)
