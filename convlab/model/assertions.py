"""Assertion specs: one discriminated union on `kind` for every assertion of every format.

Specs are validated when they are built (regexes compile, matcher shapes, operator
operands), so a bad spec is a load-time SuiteError, never a run-time crash. Evaluation
lives in `convlab.checks`; nothing here runs an agent.

Format spellings map onto kinds as follows:
- JSONL (Yao): equals, contains, not_contains, regex, json_path, type, tool_called,
  tool_result, script, agent (a validator agent), `expected` -> equals.
- JSON suite (intention-kernel): check, all, any, not, custom.
- YAML (HoloDeck): expected_tools; evaluations -> metric (standard/geval/rag), grader (code).
- Python (thinkingbox): python_test (the test function itself).
- Any format: judge (LLM-as-judge, yes/no or a rubric score).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from convlab.registry import Registry

__all__ = [
    "AgentValidator",
    "All",
    "Any_",
    "ArgMatcher",
    "Assertion",
    "Check",
    "Contains",
    "Custom",
    "Equals",
    "ExpectedTool",
    "ExpectedTools",
    "Grader",
    "JsonPath",
    "Judge",
    "Metric",
    "Not",
    "NotContains",
    "PythonTest",
    "Regex",
    "Script",
    "ToolCalled",
    "ToolResult",
    "TypeOf",
    "parse_assertion",
]

OPERATORS = ("equals", "matches", "contains", "exists", "absent", "gte", "lte", "length")
GRADER_RE = re.compile(r"^[\w.]+:[\w_]+$")
RESPONSE_PATH_RE = re.compile(r"^[A-Za-z_][\w-]*(\[\d+\])*(\.[A-Za-z_][\w-]*(\[\d+\])*)*$")
StandardMetric = Literal[
    "groundedness",
    "relevance",
    "coherence",
    "fluency",
    "bleu",
    "rouge",
    "meteor",
    "equality",
    "numeric",
]
STANDARD_METRICS: tuple[str, ...] = get_args(StandardMetric)


def _compile(pattern: str) -> str:
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise ValueError(f"cannot compile regex {pattern!r}: {exc}") from None
    return pattern


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    """The assertion kind (the union's tag)."""

    id: str | None = None
    """Identifier (unique among siblings where the format requires it)."""
    label: str | None = None
    """What the assertion establishes, in words; shown in results."""
    message: str | None = None
    """Custom failure message that replaces the kind's own."""
    negate: bool = False
    """Invert the outcome (errors stay errors)."""

    @field_serializer("kind")
    def _keep_kind(self, kind: str) -> str:
        # `kind` is the union's tag: a field serializer keeps it even when dumping with
        # exclude_defaults (pydantic knows no default for a field it does not serialize
        # itself); a model serializer that put it back would rebuild the whole dump.
        return kind


class Equals(_Spec):
    """The whole output equals `value` (objects order-insensitive; 5 == 5.0; no coercion)."""

    kind: Literal["equals"] = "equals"
    value: Any = None


class Contains(_Spec):
    """The output text (structured output as JSON) contains `value`, case-sensitive."""

    kind: Literal["contains"] = "contains"
    value: Any = None


class NotContains(_Spec):
    """The output text does not contain `value`."""

    kind: Literal["not_contains"] = "not_contains"
    value: Any = None


class Regex(_Spec):
    """Unanchored regex search over the output text; flags inline, e.g. `(?i)`."""

    kind: Literal["regex"] = "regex"
    pattern: str

    _check = field_validator("pattern")(_compile)


class JsonPath(_Spec):
    """The value at `path` of the JSON/YAML found in the output equals `value` (a list = any of)."""

    kind: Literal["json_path"] = "json_path"
    path: str = ""
    value: Any = None


class TypeOf(_Spec):
    """The output (or the value at `path`) has JSON type `value` (string, number, object...)."""

    kind: Literal["type"] = "type"
    value: Literal["null", "string", "number", "boolean", "array", "object"]
    path: str | None = None


class ToolExpectation(BaseModel):
    """A tool call expected by name, optionally with a subset of its arguments."""

    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | None = None


class ToolCalled(_Spec):
    """A tool was called: a name, any of several names, or a name with arguments."""

    kind: Literal["tool_called"] = "tool_called"
    value: str | list[str] | ToolExpectation


class ToolResult(_Spec):
    """The first call of `tool` succeeded and, when `result` is given, its result matches."""

    kind: Literal["tool_result"] = "tool_result"
    tool: str
    result: Any = None
    has_result: bool = False
    """Whether `result` was given (a given null must match null)."""

    @model_validator(mode="before")
    @classmethod
    def _presence(cls, data: Any) -> Any:
        if isinstance(data, dict) and "result" in data and "has_result" not in data:
            data = {**data, "has_result": True}
        return data

    @field_validator("result")
    @classmethod
    def _regex_result(cls, v: Any) -> Any:
        if isinstance(v, str) and v.startswith("regex:"):
            _compile(v[len("regex:") :])
        return v


class Script(_Spec):
    """A Python callable `module:function(output, input, expected)` -> bool | {pass, message}."""

    kind: Literal["script"] = "script"
    script: str
    value: Any = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Settings written with the assertion (Yao `options`, e.g. `metadata` limits), kept as is."""


class AgentValidator(_Spec):
    """A validator agent judges the output against `value` (criteria); answers {passed, reason}."""

    kind: Literal["agent"] = "agent"
    use: str | None = None
    value: Any = None
    options: dict[str, Any] = Field(default_factory=dict)


class Check(_Spec):
    """The value at `path` of the observation's dict view satisfies `operator`."""

    kind: Literal["check"] = "check"
    path: list[str | int]
    operator: Literal["equals", "matches", "contains", "exists", "absent", "gte", "lte", "length"]
    value: Any = None

    @model_validator(mode="before")
    @classmethod
    def _operands(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        op = data.get("operator")
        if op in ("exists", "absent"):
            if "value" in data and data["value"] is not None:
                raise ValueError(f"operator {op!r} takes no value")
        elif op in OPERATORS and "value" not in data:
            raise ValueError(f"operator {op!r} needs a value")
        v = data.get("value")
        if op in ("gte", "lte", "length") and (
            isinstance(v, bool) or not isinstance(v, int | float)
        ):
            raise ValueError(f"operator {op!r} needs a number, got {v!r}")
        if op == "length" and (not isinstance(v, int) or v < 0):
            raise ValueError(f"operator 'length' needs a non-negative integer, got {v!r}")
        return data

    @model_serializer(mode="wrap")
    def _keep_value(self, handler: SerializerFunctionWrapHandler) -> Any:
        # `equals null` is a real operand: keep `value` even when dumping with
        # exclude_defaults, or the native form (to_json/to_yaml) would not load back.
        data = handler(self)
        keeps = self.operator not in ("exists", "absent")
        if isinstance(data, dict) and keeps and "value" not in data:
            data["value"] = self.value
        return data


class All(_Spec):
    """Every child passes (all children are evaluated; an error makes the parent an error)."""

    kind: Literal["all"] = "all"
    assertions: list[Assertion] = Field(min_length=1)


class Any_(_Spec):
    """Some child passes (all children are evaluated; an error makes the parent an error)."""

    kind: Literal["any"] = "any"
    assertions: list[Assertion] = Field(min_length=1)


class Not(_Spec):
    """The child fails (a child error stays an error, never a pass)."""

    kind: Literal["not"] = "not"
    assertion: Assertion


EVALUATORS: Registry[Callable[..., Any]] = Registry("evaluator")
"""User evaluators (`custom` kind, JSONL types not built in): name -> fn(ctx, parameters).

Kept with the specs, not in checks: loaders must know which names exist (a JSONL `type` that
is not built in is valid only if registered) and loaders never import the checks.
"""


class Custom(_Spec):
    """A user evaluator registered with `@convlab.evaluator(name)`, called with `parameters`."""

    kind: Literal["custom"] = "custom"
    evaluator: str
    parameters: dict[str, Any] = Field(default_factory=dict)


class ArgMatcher(BaseModel):
    """How one tool argument is matched: literal (numbers as numbers), fuzzy or regex."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["literal", "fuzzy", "regex"] = "literal"
    value: Any = None

    @model_validator(mode="after")
    def _shape(self) -> ArgMatcher:
        if self.mode != "literal" and not isinstance(self.value, str):
            raise ValueError(f"{self.mode} pattern must be a string, got {self.value!r}")
        if self.mode == "regex":
            _compile(self.value)
        return self


class ExpectedTool(BaseModel):
    """One entry of HoloDeck's `expected_tools`: a bare name, or {name, args?, count?}."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    args: dict[str, ArgMatcher] | None = None
    count: int = Field(default=1, ge=1)
    bare: bool = False
    """Written as a bare string (fast path: substring name match only)."""


class ExpectedTools(_Spec):
    """These tools were called in this turn (substring names; args and counts when given)."""

    kind: Literal["expected_tools"] = "expected_tools"
    tools: list[ExpectedTool] = Field(default_factory=list)


class Metric(_Spec):
    """A HoloDeck evaluation metric: standard (equality, numeric, ...), geval or rag."""

    kind: Literal["metric"] = "metric"
    type: Literal["standard", "geval", "rag"] = "standard"
    metric: str
    ground_truth: str | None = None
    threshold: float | None = None
    response_path: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Metric settings: case_insensitive, absolute_tolerance, criteria, ..."""
    skip_without_ground_truth: bool = False
    """Multi-turn rule: a metric that needs ground truth is skipped on turns without it."""

    @model_validator(mode="after")
    def _known(self) -> Metric:
        if self.type == "standard" and self.metric not in STANDARD_METRICS:
            raise ValueError(
                f"unknown standard metric {self.metric!r}; one of {', '.join(STANDARD_METRICS)}"
            )
        if self.response_path is not None and not RESPONSE_PATH_RE.match(self.response_path):
            raise ValueError(f"invalid response_path {self.response_path!r}")
        return self


class Grader(_Spec):
    """A code grader `pkg.module:callable` called with a GraderContext once per turn."""

    kind: Literal["grader"] = "grader"
    grader: str
    threshold: float | None = None
    fail_on_error: bool = False
    ground_truth: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("grader")
    @classmethod
    def _form(cls, v: str) -> str:
        if not GRADER_RE.match(v):
            raise ValueError(f"grader must look like 'pkg.module:callable', got {v!r}")
        return v


class PythonTest(_Spec):
    """A thinkingbox test function, run with `x` (the conversation) and `judge`."""

    kind: Literal["python_test"] = "python_test"
    function: str
    code: str
    """The file's source with the other test functions blanked (line numbers preserved)."""
    file: str
    line: int


class Judge(_Spec):
    """LLM-as-judge: a yes/no `question` about the reply, or a `rubric` scored 0..1."""

    kind: Literal["judge"] = "judge"
    question: str | None = None
    rubric: str | None = None
    threshold: float = 0.5
    use: str | None = None
    """Judge agent spec; None means the run's judge."""

    @model_validator(mode="after")
    def _one(self) -> Judge:
        if (self.question is None) == (self.rubric is None):
            raise ValueError("a judge needs exactly one of 'question' or 'rubric'")
        return self


Assertion: TypeAlias = SerializeAsAny[  # each spec dumps as its own class, rather than
    Annotated[  # through pydantic's serializer of the tagged union (which picks the class)
        Equals
        | Contains
        | NotContains
        | Regex
        | JsonPath
        | TypeOf
        | ToolCalled
        | ToolResult
        | Script
        | AgentValidator
        | Check
        | All
        | Any_
        | Not
        | Custom
        | ExpectedTools
        | Metric
        | Grader
        | PythonTest
        | Judge,
        Field(discriminator="kind"),
    ]
]

for _m in (All, Any_, Not):
    _m.model_rebuild()


ASSERTION_ADAPTER: TypeAdapter[Assertion] = TypeAdapter(Assertion)


def parse_assertion(data: dict[str, Any]) -> Assertion:
    """Validate one assertion dict in convlab's native spelling."""
    return ASSERTION_ADAPTER.validate_python(data)


KIND_NAMES: frozenset[str] = frozenset(
    m.model_fields["kind"].default for m in get_args(get_args(Assertion)[0])
)
"""Every assertion kind's name (the union's tags)."""
