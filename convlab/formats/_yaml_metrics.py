"""HoloDeck `evaluations` entries -> Metric / Grader specs, and metric precedence.

The four entry kinds mirror holodeck/models/evaluation.py (all `extra="forbid"`):
`type: standard` (the default when `type` is absent) with a literal `metric` name and the
deterministic flags; `type: geval` (`name`, `criteria`, ...); `type: rag` (`metric_type`);
`type: code` (`grader: "pkg.module:callable"`, its module found by path at load and imported
only by the run, with the agent.yaml's folder importable then: loading runs no user code).
Entries with `enabled: false` are validated, then dropped
(HoloDeck 0.7.1 still runs a disabled standard metric; convlab follows the documented
intent). `scale` is rejected: scores are 0..1 and HoloDeck ignores it. `timeout_ms`,
`retry_on_failure` and geval's `strict_mode` are carried in the options and applied by
convlab.checks.metrics to judged metrics. Each entry keeps its own options, even when two
entries name the same metric (HoloDeck keeps one per metric name for the whole file).
"""

from __future__ import annotations

import importlib.machinery
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from convlab.formats._base import did_you_mean, plain
from convlab.formats._yaml_common import HINT, At, validate_model
from convlab.model.assertions import GRADER_RE, Grader, Metric, StandardMetric

__all__ = [
    "GraderImporter",
    "MetricSpec",
    "grader_home",
    "parse_metrics",
    "pick_level",
    "with_truth",
]

MetricSpec = Metric | Grader
_TYPES = ("standard", "geval", "rag", "code")
_GEVAL_PARAMS = ("actual_output", "context", "expected_output", "input", "retrieval_context")


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    fail_on_error: bool = False
    model: dict[str, Any] | None = None


class _Standard(_Common):
    type: Literal["standard"] = "standard"
    metric: StandardMetric
    threshold: float | None = None
    scale: int | None = Field(default=None, gt=0)
    retry_on_failure: int | None = Field(default=None, ge=1, le=3)
    timeout_ms: int | None = Field(default=None, gt=0)
    custom_prompt: str | None = None
    case_insensitive: bool = False
    strip_whitespace: bool = False
    strip_punctuation: bool = False
    absolute_tolerance: float = Field(default=1e-6, ge=0.0)
    relative_tolerance: float = Field(default=0.0, ge=0.0)
    accept_percent: bool = False
    accept_thousands_separators: bool = False
    response_path: str | None = None


class _GEval(_Common):
    type: Literal["geval"] = "geval"
    name: str = Field(min_length=1)
    criteria: str = Field(min_length=1)
    evaluation_steps: list[str] | None = None
    evaluation_params: list[str] = Field(default_factory=lambda: ["actual_output"])
    strict_mode: bool = False
    threshold: float | None = None

    @field_validator("threshold")
    @classmethod
    def _threshold(cls, v: float | None) -> float | None:
        if v is not None and not 0.0 <= v <= 1.0:
            raise ValueError("threshold must be between 0.0 and 1.0")
        return v

    @field_validator("evaluation_params")
    @classmethod
    def _params(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("evaluation_params must not be empty")
        bad = sorted(set(v) - set(_GEVAL_PARAMS))
        if bad:
            raise ValueError(
                f"Invalid evaluation_params: {bad}. Valid options: {list(_GEVAL_PARAMS)}"
            )
        return v


class _RagType(StrEnum):
    FAITHFULNESS = "faithfulness"
    CONTEXTUAL_RELEVANCY = "contextual_relevancy"
    CONTEXTUAL_PRECISION = "contextual_precision"
    CONTEXTUAL_RECALL = "contextual_recall"
    ANSWER_RELEVANCY = "answer_relevancy"


class _Rag(_Common):
    type: Literal["rag"] = "rag"
    metric_type: _RagType
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    include_reason: bool = True


class _Code(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["code"] = "code"
    grader: str = Field(pattern=GRADER_RE.pattern)
    threshold: float | None = None
    enabled: bool = True
    fail_on_error: bool = False
    name: str | None = None


_MODELS: dict[str, type[BaseModel]] = {
    "standard": _Standard,
    "geval": _GEval,
    "rag": _Rag,
    "code": _Code,
}


_GRADER_HOMES: dict[str, str] = {}
"""Grader reference -> the agent.yaml folder it was resolved from at load (for the run)."""


def grader_home(spec: str) -> str | None:
    """The folder a loaded suite resolved grader `spec` from (import it with that folder
    on `sys.path`), or None when no suite did, or it resolved on the ordinary path."""
    return _GRADER_HOMES.get(spec)


class GraderImporter:
    """Resolves `pkg.module:callable` graders by path at load: nothing is imported or run.

    HoloDeck imports the module at load, with the agent.yaml folder put on `sys.path` for
    good. Here the module's file is only found (the agent's folder first, then `sys.path`),
    with no package `__init__` executed and `sys.path` untouched; the run imports it
    (`convlab.checks.graders`), with that folder importable only while importing.
    """

    def __init__(self, base: Path) -> None:
        self.base = str(base.resolve())
        self._seen: dict[str, str | None] = {}

    def __call__(self, spec: str) -> str | None:
        """None when `spec`'s module file is found, else why not."""
        if spec not in self._seen:
            self._seen[spec] = self._find(spec)
        return self._seen[spec]

    def _find(self, spec: str) -> str | None:
        module = spec.partition(":")[0] if ":" in spec else spec.rpartition(".")[0]
        if _locate(module, [self.base]):
            _GRADER_HOMES[spec] = self.base
            return None
        if module in sys.modules or _locate(module, None):
            return None
        return f"cannot import module {module!r} for {spec!r}: No module named {module!r}"


def _locate(module: str, path: list[str] | None) -> bool:
    """Whether `module` (dotted) has a file under `path` (None: `sys.path`), found without
    importing anything: each package's folder is searched for the next part."""
    search = path
    parts = module.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        try:
            found = importlib.machinery.PathFinder.find_spec(name, search)
        except (ImportError, ValueError, OSError):
            return False
        if found is None:
            return False
        if i < len(parts) - 1:
            locations = found.submodule_search_locations
            if not locations:
                return False
            search = list(locations)
    return True


def parse_metrics(value: Any, at: At, importer: GraderImporter) -> list[MetricSpec] | None:
    """An `evaluations` list as specs (ground truth unset); None when the key is absent."""
    if value is None:
        return None
    if not isinstance(value, list):
        at.error("Input should be a valid list")
        return []
    out: list[MetricSpec] = []
    for i, raw in enumerate(value):
        spec = _entry(raw, at.item(value, i), importer)
        if spec is not None:
            out.append(spec)
    return out


def _entry(raw: Any, at: At, importer: GraderImporter) -> MetricSpec | None:
    if not isinstance(raw, dict):
        at.error("Input should be a valid dictionary")
        return None
    kind = raw.get("type", "standard")
    if kind not in _TYPES:
        at.key(raw, "type").error(
            f"Input tag {kind!r} found using 'type' does not match any of the expected tags: "
            + ", ".join(repr(t) for t in _TYPES)
            + did_you_mean(kind, _TYPES, HINT)
        )
        return None
    model = validate_model(_MODELS[kind], raw, at)
    if model is None:
        return None
    if isinstance(model, _Code):
        why = importer(model.grader)
        if why is not None:
            at.key(raw, "grader").error(why)
            return None
    if isinstance(model, _Standard) and model.scale is not None:
        at.key(raw, "scale").error(
            "scale is not supported: every metric scores from 0 to 1 (HoloDeck 0.7.1 "
            "validates scale and then ignores it); remove it and write a 0..1 threshold"
        )
        return None
    if not getattr(model, "enabled", True):
        return None
    try:
        return _spec(model)
    except ValidationError as exc:  # e.g. a response_path the model rejects
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else ""
            where = at.key(raw, "response_path") if field in ("", "response_path") else at
            where.error(str(err["msg"]).removeprefix("Value error, "))
        return None


def _spec(model: BaseModel) -> MetricSpec:
    written = plain(model.model_dump(exclude_unset=True, mode="json"))
    if isinstance(model, _Code):
        opts = {"name": model.name} if model.name else {}
        return Grader(
            grader=model.grader,
            threshold=model.threshold,
            fail_on_error=model.fail_on_error,
            options=opts,
        )
    if isinstance(model, _Standard):
        name, threshold = model.metric, model.threshold
        drop = {"type", "metric", "threshold", "response_path", "enabled"}
        return Metric(
            type="standard",
            metric=name,
            threshold=threshold,
            response_path=model.response_path,
            options={k: v for k, v in written.items() if k not in drop},
        )
    if isinstance(model, _GEval):
        drop = {"type", "name", "threshold", "enabled"}
        return Metric(
            type="geval",
            metric=model.name,
            threshold=model.threshold,
            options={k: v for k, v in written.items() if k not in drop},
        )
    assert isinstance(model, _Rag)
    drop = {"type", "metric_type", "threshold", "enabled"}
    return Metric(
        type="rag",
        metric=model.metric_type.value,
        threshold=model.threshold,
        options={k: v for k, v in written.items() if k not in drop},
    )


def pick_level(*levels: tuple[Any, list[MetricSpec] | None]) -> list[MetricSpec]:
    """HoloDeck's precedence: the first level whose list AS WRITTEN is non-empty wins whole.

    Lists replace, never merge. Each level is (raw YAML value, parsed specs).
    """
    for raw, specs in levels:
        if isinstance(raw, list) and raw:
            return list(specs or [])
    return []


def with_truth(specs: list[MetricSpec], truth: str | None, skip: bool) -> list[MetricSpec]:
    """Copies of `specs` carrying this turn's (or case's) ground truth.

    `skip` is the multi-turn rule: a metric that needs ground truth is skipped on a turn
    without it; single-turn cases pass False (HoloDeck fails such a metric instead).
    """
    out: list[MetricSpec] = []
    for spec in specs:
        if isinstance(spec, Metric):
            out.append(
                spec.model_copy(update={"ground_truth": truth, "skip_without_ground_truth": skip})
            )
        else:
            out.append(spec.model_copy(update={"ground_truth": truth}))
    return out
