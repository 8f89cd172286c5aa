"""thinkingbox Python tests: the `python_test` kind and the TestContext `x` it receives.

The test's code (its file with the other tests blanked, so line numbers are the file's)
is executed in a daemon thread and the function called with `x` and `judge`.
Result rules (thinkingbox's `TestScript.evaluate_sync`, common/testrunner.py): returning
normally passes (score 1.0); a returned number is the reward (`score`); an AssertionError fails
with its message; any other exception is an error that counts as a run that did not pass
(blamed on the agent, as `tb agg` counts it). The details hold the traceback, the failing
line number and text, the test's printed output, `x.metadata` and the judge's decisions.

Real thinkingbox files start with `from thinkingbox.common import Judge, TestContext`;
when thinkingbox is not installed those names resolve to convlab's TestJudge/TestContext.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import functools
import inspect
import linecache
import os
import traceback
import types
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from convlab._user_code import in_daemon_thread
from convlab.checks._core import CheckContext, error_result, kind, result
from convlab.checks._tb_standin import TbRecord, message_record, standin_modules, tool_call_record
from convlab.checks._values import json_safe, reply_text
from convlab.checks.judge import TestJudge, transcript
from convlab.model.assertions import PythonTest
from convlab.model.blame import blame_of
from convlab.model.conversation import Message
from convlab.model.records import AssertionResult
from convlab.model.tracebacks import error_info

__all__ = ["TestContext", "build_test_context", "python_test"]


@dataclass
class TestContext:
    """What a Python test sees as `x`: the conversation, the tool calls and the world state."""

    __test__ = False  # not a pytest test class

    response: str = ""
    """The last assistant message's text."""
    effects: dict[str, Any] = field(default_factory=dict)
    """The world state as the agent left it (per server, e.g. `x.effects["cloud_drive"]`)."""
    tool_calls: list[TbRecord] = field(default_factory=list)
    """Every tool call of the conversation: `{name, arguments, result}`, and as attributes
    thinkingbox's `ToolCallResponse` (`.tool_call.name`, `.tool_response.content`)."""
    messages: list[TbRecord] = field(default_factory=list)
    """The whole conversation as OpenAI-style dicts, whose attributes read as thinkingbox's
    message types (`.role`, `.content`, `.T`, `.tool_calls[i].name`)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Writable: what the test stores here is kept in the result's details."""
    init_result: dict[str, Any] | None = None
    """The world as the case started (before the agent's first turn), a copy."""
    session_id: str | None = None
    tool_direct_responses: list[str] = field(default_factory=list)
    """thinkingbox's direct tool responses shown to the user; convlab agents have none."""

    def __post_init__(self) -> None:
        # a context built by hand may hold plain dicts: give them the attribute view too
        self.messages = [m if isinstance(m, TbRecord) else message_record(m) for m in self.messages]
        self.tool_calls = [
            c
            if isinstance(c, TbRecord)
            else tool_call_record(
                c.get("name", ""), c.get("arguments"), c.get("result"), c.get("id")
            )
            for c in self.tool_calls
        ]

    def transcript(self, limit: int = 0) -> str:
        """The conversation as readable text; `limit` > 0 keeps the tail from the `limit`-th
        last assistant text on (thinkingbox's `get_conversation_transcript(limit=...)`)."""
        if limit < 0:
            raise ValueError("limit must be >= 0")
        messages = [Message.model_validate(dict(m)) for m in self.messages]
        said = [i for i, m in enumerate(messages) if m.role == "assistant" and m.text()]
        start = said[-limit] if 0 < limit <= len(said) else 0
        return transcript(messages[start:])

    def query(self) -> str:
        """The first user message's text."""
        for m in self.messages:
            if m.get("role") == "user":
                return Message.model_validate(m).text()
        return ""


def build_test_context(ctx: CheckContext) -> TestContext:
    """Build `x` from a check context (the conversation, every turn's tool calls, effects)."""
    observations = [t.observation for t in ctx.history if t.observation is not None]
    if not observations:
        observations = [ctx.observation]
    calls = [
        tool_call_record(c.name, c.arguments, c.result, c.id)
        for obs in observations
        for c in obs.tool_calls
    ]
    said = [m for m in ctx.messages if m.role == "assistant" and m.text()]
    effects = ctx.observation.effects if ctx.observation.effects is not None else ctx.world
    return TestContext(
        response=said[-1].text() if said else reply_text(ctx.observation),
        effects=dict(effects or {}),
        tool_calls=calls,
        messages=[message_record(m.model_dump(exclude_none=True)) for m in ctx.messages],
        init_result=copy.deepcopy(ctx.case.world) if ctx.case is not None else None,
    )


@dataclass
class _Outcome:
    value: Any = None
    exc: BaseException | None = None
    traceback: str = ""
    lineno: int | None = None
    line: str = ""
    prints: list[str] = field(default_factory=list)


@functools.cache
def _standin() -> dict[str, types.ModuleType]:
    return standin_modules(TestJudge, TestContext)


def _shim_import(real: Any) -> Any:
    """`__import__` that serves thinkingbox's modules from convlab's stand-in
    (`convlab.checks._tb_standin`) when thinkingbox is absent."""

    def imp(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        try:
            return real(name, globals, locals, fromlist, level)
        except ImportError:
            modules = _standin()
            if level or name not in modules:
                raise
        return modules[name] if fromlist else modules["thinkingbox"]

    return imp


def _globals(spec: PythonTest, prints: list[str]) -> dict[str, Any]:
    def captured_print(
        *args: Any,
        sep: str | None = " ",
        end: str | None = "\n",
        file: Any = None,
        flush: bool = False,
    ) -> None:
        # thinkingbox's MockPrint (common/testrunner.py) drops `file=`: stderr is captured too
        prints.append(
            (" " if sep is None else sep).join(map(str, args)) + ("\n" if end is None else end)
        )

    own = dict(vars(builtins))
    own["__import__"] = _shim_import(builtins.__import__)
    own["print"] = captured_print
    return {"__name__": f"convlab_test_{spec.function}", "__file__": spec.file, "__builtins__": own}


def _arguments(fn: Any, x: TestContext, judge: TestJudge) -> dict[str, Any]:
    offered = {"x": x, "judge": judge}
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return offered
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return offered
    return {k: v for k, v in offered.items() if k in params}


def _locate(spec: PythonTest, exc: BaseException, out: _Outcome) -> None:
    """Fill the traceback (from the test's own frames on) and the last line in the test file."""
    tb = exc.__traceback__
    frames = [f for f in traceback.extract_tb(tb) if f.filename == spec.file]
    if frames:
        out.lineno = frames[-1].lineno
        lines = spec.code.splitlines()
        if out.lineno and 0 < out.lineno <= len(lines):
            out.line = lines[out.lineno - 1].strip()
    while tb is not None and tb.tb_frame.f_code.co_filename != spec.file:
        tb = tb.tb_next
    out.traceback = "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def _run(spec: PythonTest, x: TestContext, judge: TestJudge) -> _Outcome:
    """Execute the test file's code, then the test function (in a daemon thread)."""
    out = _Outcome()
    if not os.path.exists(spec.file):  # let tracebacks show the lines of in-memory code
        lines = [line + "\n" for line in spec.code.splitlines()]
        linecache.cache[spec.file] = (len(spec.code), None, lines, spec.file)
    try:
        namespace = _globals(spec, out.prints)
        exec(compile(spec.code, spec.file, "exec"), namespace)  # the user's own test code
        fn = namespace[spec.function]
        out.value = fn(**_arguments(fn, x, judge))
    except BaseException as exc:  # sys.exit(), pytest.fail(): this test's error, not the run's
        out.exc = exc
        _locate(spec, exc, out)
    return out


def _details(out: _Outcome, x: TestContext, judge: TestJudge) -> dict[str, Any]:
    details: dict[str, Any] = {"prints": "".join(out.prints), "metadata": json_safe(x.metadata)}
    decisions = judge.drain_decisions()
    if decisions:
        details["judge_motivation"] = json_safe(decisions)
    if out.exc is not None:
        details.update(traceback=out.traceback, lineno=out.lineno, line_content=out.line)
    return details


@kind("python_test")
async def python_test(spec: PythonTest, ctx: CheckContext) -> AssertionResult:
    """A thinkingbox test function decides, given `x` (TestContext) and `judge` (TestJudge).

    Returning normally passes with score 1.0; a returned number is the score (the reward);
    an AssertionError fails with its message; any other exception is an error. The
    traceback, failing line, printed output and `x.metadata` are kept in the details.
    """
    x = ctx.extra.get("x")
    if not isinstance(x, TestContext):
        x = build_test_context(ctx)
    judge = TestJudge(ctx.judge, asyncio.get_running_loop())
    out = await in_daemon_thread(_run, spec, x, judge)
    details = _details(out, x, judge)
    where = f"{spec.file}:{out.lineno}" if out.lineno else spec.file
    if isinstance(out.exc, AssertionError):
        text = str(out.exc) or f"assertion failed: {out.line}"
        return result(spec, False, text, score=0.0, details={**details, "location": where})
    if out.exc is not None:
        msg = f"{type(out.exc).__name__}: {out.exc}"
        # thinkingbox counts a test that raised as a run that did not pass (agg_main.py: every
        # decode is a run, a pass only when the test returned): so the agent's, unless the
        # judge's call (or its connection) raised it
        blame = blame_of(out.exc, "agent")
        return error_result(
            spec,
            msg,
            blame,
            score=0.0,
            details={**details, "location": where},
            error_info=error_info(out.exc),
        )
    if out.value is None:
        return result(spec, True, "the test returned normally", score=1.0, details=details)
    reward, problem = _reward(out.value)
    if reward is None:  # `tb infer` fails that decode: a run that did not pass, as above
        details["returned"] = repr(out.value)[:2000]
        return error_result(spec, problem, "agent", score=0.0, details=details)
    return result(
        spec,
        True,
        f"the test returned reward {reward:g}",
        score=reward,
        actual=out.value if isinstance(out.value, int | float) else reward,
        details=details,
    )


_REWARD: TypeAdapter[float] = TypeAdapter(Annotated[float, Field(ge=0.0, le=1.0)])


def _reward(value: Any) -> tuple[float | None, str]:
    """The reward a test returned, by `tb infer`'s rule, or why it is a system error.

    `tb infer` runs each test in a subprocess (`TestScriptSubprocess`, common/testrunner.py)
    that sends `TestResult` back as JSON, where `reward: float = Field(ge=0, le=1)` is
    validated: a value that is not a number in [0, 1] ("abc", 2.5, -1, NaN) fails there and
    the test is a system error. JSON's lax float reading also accepts True/False and "0.5".
    """
    why = (
        f"the test returned {repr(value)[:200]}: a reward must be a number from 0 to 1 "
        "(thinkingbox's TestResult.reward)"
    )
    try:
        return _REWARD.validate_json(to_json(value)), ""
    except (PydanticSerializationError, ValidationError, ValueError):
        return None, why
