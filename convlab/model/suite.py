"""The one model every format loads into: Suite, Case (four modes), Turn, Variant, Checkpoint.

Loaders turn files into these; nothing downstream knows which format a case came from.
A native YAML/JSON form (`Suite.to_yaml()`, `Suite.to_json()`) round-trips losslessly.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_validator,
)

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
    "interaction_problem",
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
    """A structured choice: exactly one of option index, label or id (intention-kernel)."""

    option_index: int | None = Field(default=None, ge=0)
    option_label: str | None = None
    option_id: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Selection:
        given = [v for v in (self.option_index, self.option_label, self.option_id) if v is not None]
        if len(given) != 1:
            raise ValueError("a selection needs exactly one of optionIndex, optionLabel, optionId")
        return self

    def pick(self, interaction: Any) -> dict[str, Any]:
        """The option this selection picks from the previous turn's open interaction.

        As intention-kernel's direct adapter (agentAdapter.ts `send`, @923d4314): the
        interaction must be an object with a non-empty string `id` and, if it has `options`,
        an array of objects with string `id` and `label` - otherwise
        EVALUATION_SELECTION_UNAVAILABLE (no interaction at all, or one without an `id`).
        The selector must then match exactly one option - otherwise (an index out of
        range, an unknown label or id, two options with that label, no options)
        EVALUATION_SELECTION_AMBIGUOUS: a selection never falls back to a first option.

        Raises:
            SelectionError: With the code first in its message (`CODE: why`).
        """
        from convlab.errors import SelectionError

        problem = interaction_problem(interaction)
        if problem is not None:
            raise SelectionError(f"EVALUATION_SELECTION_UNAVAILABLE: {problem}")
        choices: list[dict[str, Any]] = interaction.get("options") or []
        if self.option_index is not None:
            hits = choices[self.option_index : self.option_index + 1]
            what = f"optionIndex {self.option_index}"
        elif self.option_label is not None:
            hits = [c for c in choices if c["label"] == self.option_label]
            what = f"optionLabel {self.option_label!r}"
        else:
            hits = [c for c in choices if c["id"] == self.option_id]
            what = f"optionId {self.option_id!r}"
        if len(hits) != 1:
            raise SelectionError(
                f"EVALUATION_SELECTION_AMBIGUOUS: {what} matches {len(hits)} of the "
                f"{len(choices)} option(s) of interaction {interaction['id']!r} "
                "(a selection must match exactly one)"
            )
        return dict(hits[0])


def interaction_problem(interaction: Any) -> str | None:
    """Why `interaction` is no open choice to select from (intention-kernel's
    `interactionSchema`: `{id: non-empty string, options?: [{id: string, label: string}]}`,
    other keys allowed), or None when it is one."""
    if interaction is None:
        return "there is no open interaction to select from (the previous turn left none)"
    if not isinstance(interaction, dict):
        return f"the open interaction is not an object ({type(interaction).__name__})"
    ident = interaction.get("id")
    if not isinstance(ident, str) or not ident:
        return "the open interaction has no 'id' (a non-empty string), so it cannot be answered"
    if "options" not in interaction:
        return None
    options = interaction["options"]
    if not isinstance(options, list):
        return "the open interaction's 'options' is not an array"
    for i, option in enumerate(options):
        if not (
            isinstance(option, dict)
            and isinstance(option.get("id"), str)
            and isinstance(option.get("label"), str)
        ):
            return f"option {i} of the open interaction needs a string 'id' and 'label'"
    return None


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
    invalid: str | None = None
    """Why the agent's adapter refuses this input (JSON suites: intention-kernel's strict
    `{text, selection?}` input schema). It is checked when the turn runs, as the kernel's
    direct adapter does, so the turn is an error (EVALUATION_AGENT_INPUT_INVALID) and the
    file still loads; None: the input is fine."""


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

    input: list[Message] | None = None
    """Standard/dynamic/code: the first messages (a history is allowed)."""
    assertions: list[Assertion] = Field(default_factory=list)
    """Standard: checks on the reply. Turns: final checks. Code: the test function."""
    turns: list[Turn] = Field(default_factory=list)
    simulator: SimulatorSpec | None = None
    checkpoints: list[Checkpoint] = Field(default_factory=list)
    source: Source | None = None
    """Where the case was read from. Last, as a results store's header writes it: one dump
    of the case is then both the header's text and, without its end, the text the suite's
    fingerprint hashes (`plan.suite_text`)."""

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

    @field_serializer("cases", mode="wrap")
    def _cases_as_list(self, cases: Any, handler: SerializerFunctionWrapHandler) -> Any:
        """A big JSONL file's cases are a sequence read on demand (`LazyCases`): dumped as
        the list they stand for."""
        return handler(cases if isinstance(cases, list) else list(cases))

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
