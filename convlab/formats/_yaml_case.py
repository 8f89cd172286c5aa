"""One HoloDeck test case (legacy single-turn `input`, or multi-turn `turns`) -> Case.

Rules mirror `TestCaseModel` and `Turn` (holodeck/models/test_case.py), with HoloDeck's
messages: unknown keys are forbidden; `turns` excludes `input`, `ground_truth`,
`expected_tools`, `files` and `retrieval_context` at the case level; `turns` must not be
empty; without `turns` an `input` is required; `input`, `name` and `ground_truth` must not be
blank; at most 10 files.

Mapping:
- single-turn -> `Case(mode="standard")`, input = one user Message. Attached `files` become
  extra content parts `{"type": "file", "file": <FileRef fields>}` after the text part (the
  text stays readable with `Message.text()`) and are also listed in `metadata["files"]`;
  `ground_truth` and `retrieval_context` are kept in metadata too. Assertions: an
  ExpectedTools (when `expected_tools` is written, even empty), then the case's metrics
  (case `evaluations`, else the agent's `evaluations.metrics`) carrying the ground truth
  with `skip_without_ground_truth=False`.
- multi-turn -> `Case(mode="turns")`; each Turn carries its input text and files, ground
  truth, retrieval context, `turn_config` (as `Turn.config`) and assertions: ExpectedTools
  (when written) then the metrics of the first non-empty level among the turn's, the case's
  and the agent's evaluations, with the turn's ground truth and
  `skip_without_ground_truth=True`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convlab.formats._base import plain
from convlab.formats._yaml_common import At, check_keys, type_error
from convlab.formats._yaml_metrics import (
    GraderImporter,
    MetricSpec,
    parse_metrics,
    pick_level,
    with_truth,
)
from convlab.formats._yaml_tools import expected_tools, file_refs
from convlab.model.assertions import Assertion
from convlab.model.conversation import Message
from convlab.model.suite import Case, FileRef, Source, Turn, TurnInput

__all__ = ["CASE_KEYS", "CaseContext", "build_case", "case_name"]

CASE_KEYS = (
    "name",
    "input",
    "expected_tools",
    "ground_truth",
    "files",
    "retrieval_context",
    "evaluations",
    "turns",
)
TURN_KEYS = (
    "input",
    "ground_truth",
    "expected_tools",
    "files",
    "retrieval_context",
    "evaluations",
    "turn_config",
)
_TURN_CONFLICTS = ("input", "ground_truth", "expected_tools", "files", "retrieval_context")


@dataclass
class CaseContext:
    """What every case of one file shares."""

    file: str
    """The file the cases are written in (their Source)."""
    base: Path
    """Folder that relative file paths resolve against (the agent.yaml's folder)."""
    importer: GraderImporter
    agent_raw: Any = None
    """The agent's `evaluations.metrics` as written (for precedence)."""
    agent_metrics: list[MetricSpec] | None = None


def case_name(raw: Any, at: At) -> str | None:
    """The test's `name` when valid (reported otherwise); None when absent or invalid."""
    if not isinstance(raw, dict) or raw.get("name") is None:
        return None
    name, where = raw["name"], at.key(raw, "name")
    if not isinstance(name, str):
        where.error(type_error("string", name))
        return None
    if not name.strip():
        where.error("name must be non-empty if provided")
        return None
    return name


def build_case(raw: Any, case_id: str, at: At, ctx: CaseContext) -> Case | None:
    """The Case for one `test_cases` entry, or None after reporting its problems."""
    if not isinstance(raw, dict):
        at.error("Input should be a valid dictionary or instance of TestCaseModel")
        return None
    before = len(at.problems.items)
    name = case_name(raw, at.named(None))
    at = at.named(name)
    check_keys(raw, CASE_KEYS, at)
    metrics = parse_metrics(raw.get("evaluations"), at.key(raw, "evaluations"), ctx.importer)
    case_level = (raw.get("evaluations"), metrics)
    agent_level = (ctx.agent_raw, ctx.agent_metrics)
    source = Source(file=ctx.file, line=at.line, format="yaml_cases")
    if raw.get("turns") is not None:
        turns = _turns(raw, at, ctx, case_level, agent_level)
        if len(at.problems.items) > before or not turns:
            return None
        return Case(id=case_id, name=name, mode="turns", turns=turns, source=source)
    text = _text(raw, "input", at, required=False)
    if raw.get("input") is None:
        at.error("test case requires either `input` (single-turn) or `turns` (multi-turn)")
    truth = _truth(raw, at)
    tools = expected_tools(raw.get("expected_tools"), at.key(raw, "expected_tools"))
    files = file_refs(raw.get("files"), at.key(raw, "files"), ctx.base, "test case")
    context = _strings(raw, "retrieval_context", at)
    if len(at.problems.items) > before or text is None:
        return None
    specs = with_truth(pick_level(case_level, agent_level), truth, skip=False)
    assertions: list[Assertion] = [*([tools] if tools is not None else []), *specs]
    return Case(
        id=case_id,
        name=name,
        mode="standard",
        input=[_message(text, files or [])],
        assertions=assertions,
        metadata=_metadata(truth, context, files),
        source=source,
    )


def _turns(
    raw: dict[Any, Any],
    at: At,
    ctx: CaseContext,
    case_level: tuple[Any, list[MetricSpec] | None],
    agent_level: tuple[Any, list[MetricSpec] | None],
) -> list[Turn]:
    conflicts = [k for k in _TURN_CONFLICTS if raw.get(k) is not None]
    if conflicts:
        first = at.key(raw, conflicts[0]).line
        at.on_line(first).error(
            "multi-turn test case (with `turns`) cannot also set "
            f"top-level {conflicts}; move these fields onto each turn"
        )
    value, where = raw["turns"], at.key(raw, "turns")
    if not isinstance(value, list):
        where.error(type_error("list", value))
        return []
    if not value:
        where.error("turns must be a non-empty list if provided")
        return []
    out: list[Turn] = []
    for i, item in enumerate(value):
        turn = _turn(item, where.item(value, i), ctx, case_level, agent_level)
        if turn is not None:
            out.append(turn)
    return out


def _turn(
    raw: Any,
    at: At,
    ctx: CaseContext,
    case_level: tuple[Any, list[MetricSpec] | None],
    agent_level: tuple[Any, list[MetricSpec] | None],
) -> Turn | None:
    if not isinstance(raw, dict):
        at.error("Input should be a valid dictionary or instance of Turn")
        return None
    before = len(at.problems.items)
    check_keys(raw, TURN_KEYS, at)
    text = _text(raw, "input", at, required=True)
    truth = _truth(raw, at)
    tools = expected_tools(raw.get("expected_tools"), at.key(raw, "expected_tools"))
    files = file_refs(raw.get("files"), at.key(raw, "files"), ctx.base, "turn")
    context = _strings(raw, "retrieval_context", at)
    metrics = parse_metrics(raw.get("evaluations"), at.key(raw, "evaluations"), ctx.importer)
    config = raw.get("turn_config")
    if config is not None and not isinstance(config, dict):
        at.key(raw, "turn_config").error(type_error("dictionary", config))
    if len(at.problems.items) > before or text is None:
        return None
    chosen = pick_level((raw.get("evaluations"), metrics), case_level, agent_level)
    assertions: list[Assertion] = [
        *([tools] if tools is not None else []),
        *with_truth(chosen, truth, skip=True),
    ]
    return Turn(
        input=TurnInput(text=text, files=files or []),
        assertions=assertions,
        ground_truth=truth,
        retrieval_context=context,
        config=plain(config) if isinstance(config, dict) else {},
    )


def _text(raw: dict[Any, Any], key: str, at: At, required: bool) -> str | None:
    """A non-blank string field (HoloDeck: "input must be a non-empty string")."""
    where = at.key(raw, key)
    value = raw.get(key)
    if value is None:
        if required:
            where.error("Field required")
        return None
    if not isinstance(value, str):
        where.error(type_error("string", value))
        return None
    if not value.strip():
        where.error(f"{key} must be a non-empty string")
        return None
    return value


def _truth(raw: dict[Any, Any], at: At) -> str | None:
    value, where = raw.get("ground_truth"), at.key(raw, "ground_truth")
    if value is None:
        return None
    if not isinstance(value, str):
        where.error(type_error("string", value))
        return None
    if not value.strip():
        where.error("ground_truth must be non-empty if provided")
        return None
    return value


def _strings(raw: dict[Any, Any], key: str, at: At) -> list[str] | None:
    value, where = raw.get(key), at.key(raw, key)
    if value is None:
        return None
    if not isinstance(value, list):
        where.error(type_error("list", value))
        return None
    out: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append(item)
        else:
            where.item(value, i).error(type_error("string", item))
    return out


def _message(text: str, files: list[FileRef]) -> Message:
    if not files:
        return Message(role="user", content=text)
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts += [{"type": "file", "file": f.model_dump(exclude_defaults=True)} for f in files]
    return Message(role="user", content=parts)


def _metadata(
    truth: str | None, context: list[str] | None, files: list[FileRef] | None
) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if truth is not None:
        meta["ground_truth"] = truth
    if context is not None:
        meta["retrieval_context"] = context
    if files:
        meta["files"] = [f.model_dump(exclude_defaults=True) for f in files]
    return meta
