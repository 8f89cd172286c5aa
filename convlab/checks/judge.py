"""LLM-as-judge: the `judge` kind (any format), Yao's validator `agent` kind, the Python-test judge.

A judge is any `convlab.agents.protocol.Agent`: an OpenAI-compatible model, or a plain
function `judge(messages) -> str`. Each question opens a session and sends ONE user message
holding the instructions and the material; the judge's raw answer is kept in the result's
details. With no judge configured every judge-based check is an `error` that says how to
configure one, never a silent pass.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import json
import re
from typing import Any

from convlab.agents.protocol import Agent, AgentContext, as_agent
from convlab.checks._core import NO_JUDGE, CheckContext, error_result, kind, result
from convlab.checks._extract import extract_json
from convlab.checks._values import output_of, reply_text, to_text
from convlab.checks.text import input_of
from convlab.errors import JudgeNotConfiguredError
from convlab.model.assertions import AgentValidator, Judge
from convlab.model.blame import Blame, blame_of
from convlab.model.conversation import Message
from convlab.model.records import AssertionResult
from convlab.model.tracebacks import error_info, error_text

__all__ = [
    "NO_AGENTS_PREFIX",
    "JudgeNotConfiguredError",
    "TestJudge",
    "agent_validator",
    "ask",
    "ask_closing",
    "judge",
    "parse_score",
    "parse_yesno",
    "resolve_judge",
    "transcript",
]


def _judge_blame(exc: BaseException) -> Blame:
    return blame_of(exc, "judge")


async def ask(agent: Agent, prompt: str) -> str:
    """Send one user message to a judge agent in a fresh session; return its answer text.

    A transient failure (HTTP 429/5xx, a dropped connection, a timeout) is retried with
    backoff, as the agent's own calls are, rather than turning the check into an error.
    """
    # imported here so that module-level imports keep pointing from the engine to checks
    from convlab.agents.calls import Attempts, RetryPolicy, call_agent

    ctx = AgentContext(metadata={"role": "judge"})
    session = await agent.open(ctx)
    try:
        message = [Message(role="user", content=prompt)]
        obs = await call_agent(session, message, ctx, RetryPolicy(), Attempts(), "judge")
    finally:
        await session.close()
    return obs.text if obs.text else to_text(obs.data)


async def ask_closing(agent: Agent, prompt: str, *, owned: bool) -> str:
    """`ask`, then release the agent's resources when this check created it (`use`)."""
    try:
        return await ask(agent, prompt)
    finally:
        if owned:
            await agent.aclose()


NO_AGENTS_PREFIX = "agent assertion requires 'use' field with 'agents:' prefix"
"""Yao's message (agent/test/assert.go `assertAgent`) for a `use` that names no Yao agent."""


def resolve_judge(use: str | None, ctx: CheckContext) -> Agent | None:
    """The judge for a check: the agent mapped to its `use` id, else `use` itself when it is
    a convlab agent spec, else the run's judge.

    An id is mapped with `run(judges={"agents:validator": agent})` (the bare id
    `validator` is looked up too). Yao ids such as `agents:workers.test.validator` that
    are not mapped fall back to the run's judge, so one judge can answer every check.
    """
    if use and use in ctx.judges:
        return ctx.judges[use]
    spec = (use or "").removeprefix("agents:")
    if spec in ctx.judges:
        return ctx.judges[spec]
    if spec and (":" in spec or spec.startswith("http")):
        return as_agent(spec)
    return ctx.judge


def _no_validator(use: str) -> str:
    return (
        f"no agent answers {use!r}: map it with run(..., judges={{{use!r}: agent}}) "
        f"(CLI: --judges {use}=SPEC, or `judges:` in convlab.yaml), or give the run a judge "
        "with run(..., judge=...)"
    )


def parse_yesno(answer: str) -> tuple[bool | None, str]:
    """(yes?, reason) from `{"answer": "yes", "reason": ...}` or a bare Yes/No; None if neither."""
    data = extract_json(answer)
    if isinstance(data, dict):
        value = data.get("answer", data.get("passed"))
        reason = str(data.get("reason", data.get("motivation", "")) or "")
        if isinstance(value, bool):
            return value, reason
        if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
            return value.strip().lower() == "yes", reason
    words = re.findall(r"[A-Za-z]+", answer)
    for word in (words[:1] + words[-1:]) if words else []:
        if word.lower() in ("yes", "no"):
            return word.lower() == "yes", answer.strip()
    return None, answer.strip()


def parse_score(answer: str) -> tuple[float | None, str]:
    """(score, reason) from `{"score": 0.8, "reason": ...}` or the first number; 0..1 only."""
    data = extract_json(answer)
    value: Any = None
    reason = answer.strip()
    if isinstance(data, dict) and "score" in data:
        value, reason = data["score"], str(data.get("reason", "") or "")
    else:
        found = re.search(r"-?\d+(?:\.\d+)?", answer)
        value = found.group(0) if found else None
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None, reason
    return (score, reason) if 0.0 <= score <= 1.0 else (None, reason)


def transcript(messages: list[Message]) -> str:
    """The conversation as readable text, one `role: text` line per message."""
    lines = []
    for m in messages:
        text = m.text()
        for call in m.tool_calls or []:
            fn = call.get("function", call)
            text += f" [calls {fn.get('name', '?')}]"
        lines.append(f"{m.role}: {text}")
    return "\n".join(lines)


def _yesno_prompt(question: str, reply: str, conversation: str) -> str:
    context = (
        f"The conversation:\n<conversation>\n{conversation}\n</conversation>\n\n"
        if conversation
        else ""
    )
    return (
        "You are a judge. Read the assistant's reply and answer the question about it.\n\n"
        f"{context}The reply to judge:\n<reply>\n{reply}\n</reply>\n\n"
        f"Question: {question}\n\n"
        'Answer with JSON only: {"answer": "yes" or "no", "reason": "<one sentence>"}'
    )


def _rubric_prompt(rubric: str, reply: str, conversation: str) -> str:
    context = (
        f"The conversation:\n<conversation>\n{conversation}\n</conversation>\n\n"
        if conversation
        else ""
    )
    return (
        "You are a judge. Score the assistant's reply against the rubric.\n\n"
        f"{context}The reply to judge:\n<reply>\n{reply}\n</reply>\n\n"
        f"Rubric: {rubric}\n\n"
        'Answer with JSON only: {"score": <a number from 0 to 1>, "reason": "<one sentence>"}'
    )


@kind("judge")
async def judge(spec: Judge, ctx: CheckContext) -> AssertionResult:
    """An LLM judge answers a yes/no `question` about the reply, or scores it on a `rubric`.

    Yes/no passes on "yes". A rubric score (0..1) passes at or above `threshold` (0.5).
    The judge is the run's (`run(..., judge=...)`) unless `use` names another agent. The
    judge's raw answer is in `details["judge_answer"]`; an unreadable answer is an error.
    """
    agent = resolve_judge(spec.use, ctx)
    if agent is None:
        return error_result(spec, NO_JUDGE, "judge")
    reply = (
        to_text(output_of(ctx.observation, ctx.scope))
        if ctx.scope == "checkpoint"
        else reply_text(ctx.observation)
    )
    convo = transcript(ctx.messages)
    if spec.question is not None:
        prompt, expected = _yesno_prompt(spec.question, reply, convo), "yes"
    else:
        prompt, expected = _rubric_prompt(spec.rubric or "", reply, convo), f">= {spec.threshold}"
    try:
        owned = agent is not ctx.judge and agent not in ctx.judges.values()
        answer = await ask_closing(agent, prompt, owned=owned)
    except Exception as exc:
        why = f"judge failed: {error_text(exc)}"
        info = error_info(exc)
        return error_result(spec, why, _judge_blame(exc), expected=expected, error_info=info)
    details = {"judge_answer": answer, "prompt": prompt}
    if spec.question is not None:
        yes, reason = parse_yesno(answer)
        if yes is None:
            return error_result(
                spec,
                f"judge answer is not yes/no: {answer[:200]!r}",
                "judge",
                expected=expected,
                details=details,
            )
        actual = "yes" if yes else "no"
        msg = f"judge answered {actual}: {reason}" if reason else f"judge answered {actual}"
        return result(
            spec, yes, msg, expected=expected, actual=actual, score=float(yes), details=details
        )
    score, reason = parse_score(answer)
    if score is None:
        return error_result(
            spec,
            f"judge answer has no score in 0..1: {answer[:200]!r}",
            "judge",
            expected=expected,
            details=details,
        )
    passed = score >= spec.threshold
    msg = f"judge scored {score:g} (threshold {spec.threshold:g})" + (
        f": {reason}" if reason else ""
    )
    return result(spec, passed, msg, expected=expected, actual=score, score=score, details=details)


def _validator_prompt(payload: dict[str, Any]) -> str:
    return (
        "You are a validator. Decide whether the output meets the criteria, given the input.\n"
        'Answer with JSON only: {"passed": true or false, "reason": "<one sentence>"}\n\n'
        f"```json\n{json.dumps(payload, ensure_ascii=False, default=str)}\n```"
    )


@kind("agent")
async def agent_validator(spec: AgentValidator, ctx: CheckContext) -> AssertionResult:
    """A validator LLM decides (Yao `{"type": "agent", "use": "agents:...", "value": criteria}`).

    It gets `{"output", "input", "criteria", ...options.metadata}` and must answer an
    object with a boolean `passed` (and a `reason`, which becomes the message). `use` must
    carry Yao's `agents:` prefix, or the check fails with Yao's message (it never silently
    becomes the run's judge). The validator is the agent mapped to that id
    (`run(judges={"agents:validator": agent})`), else a convlab spec written after the
    prefix (`agents:openai:gpt-4o-mini`), else the run's judge.
    """
    use = spec.use or ""
    if not use.startswith("agents:"):
        # fails as in Yao, but the file is at fault, not the reply: blamed on the suite
        return result(spec, False, NO_AGENTS_PREFIX, actual=use or None, blame="suite")
    agent = resolve_judge(use, ctx)
    if agent is None:
        return error_result(spec, _no_validator(use), "judge")
    out = output_of(ctx.observation, ctx.scope)
    payload: dict[str, Any] = {"output": out, "input": input_of(ctx)}
    if spec.value is not None:
        payload["criteria"] = spec.value
    payload.update(spec.options.get("metadata") or {})
    try:
        owned = agent is not ctx.judge and agent not in ctx.judges.values()
        answer = await ask_closing(agent, _validator_prompt(payload), owned=owned)
    except Exception as exc:
        why = f"validator agent error: {error_text(exc)}"
        return error_result(spec, why, _judge_blame(exc), error_info=error_info(exc))
    by = "the run's judge" if agent is ctx.judge else use
    details = {"judge_answer": answer, "request": payload, "validator": by}
    data = extract_json(answer)
    if not isinstance(data, dict):
        return result(
            spec,
            False,
            "validator agent returned invalid response format",
            actual=out,
            details=details,
        )
    if not isinstance(data.get("passed"), bool):
        return result(
            spec,
            False,
            "validator response missing 'passed' field",
            expected=data,
            actual=out,
            details=details,
        )
    reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
    msg = reason or f"validator {'passed' if data['passed'] else 'failed'} the output"
    return result(spec, data["passed"], msg, expected=data, actual=out, details=details)


class TestJudge:
    """The `judge` a Python test receives; sync methods that call the async judge agent.

    Tests run in a worker thread; each call is sent to the engine's event loop and waited
    for. With no judge configured a call raises JudgeNotConfiguredError, which makes the
    test an error with the how-to-configure message.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, agent: Agent | None, loop: asyncio.AbstractEventLoop | None) -> None:
        self.agent = agent
        self.loop = loop
        self.decisions: list[dict[str, Any]] = []
        # the instance's context (its cache scope among others) follows the judge's calls
        self._context = contextvars.copy_context()

    def _ask(self, prompt: str) -> str:
        if self.agent is None or self.loop is None:
            raise JudgeNotConfiguredError()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            raise RuntimeError(
                "the test judge must be called from a worker thread, not the event loop"
            )
        done: concurrent.futures.Future[str] = concurrent.futures.Future()
        agent, loop = self.agent, self.loop

        def start() -> None:
            task = loop.create_task(ask(agent, prompt), context=self._context.copy())
            task.add_done_callback(lambda t: _settle(t, done))

        loop.call_soon_threadsafe(start)
        try:
            return done.result()
        except Exception as exc:
            # the test sees the judge's own exception; the blame says it came from the judge
            with contextlib.suppress(AttributeError, TypeError):
                exc.blame = _judge_blame(exc)  # type: ignore[attr-defined]
            raise

    def text_yesno_with_motivation(self, text: str, question: str) -> dict[str, Any]:
        """{"answer": bool, "motivation": str}; an unreadable answer counts as No."""
        answer = self._ask(_yesno_prompt(question, text, ""))
        yes, reason = parse_yesno(answer)
        decision = {"question": question, "answer": bool(yes), "motivation": reason, "raw": answer}
        if yes is None:
            decision["motivation"] = f"could not read the judge's answer: {answer[:200]!r}"
        self.decisions.append(decision)
        return {"answer": bool(yes), "motivation": decision["motivation"]}

    def text_yesno(self, text: str, question: str) -> bool:
        """Whether the judge answers yes to `question` about `text`."""
        return bool(self.text_yesno_with_motivation(text, question)["answer"])

    def evaluate_bool(self, system: str, user: str) -> bool:
        """A yes/no answer to a prompt of one's own (thinkingbox's `Judge.evaluate_bool`, which
        `RubricJudge` calls): the judge agent gets `system` and `user` in one message."""
        yes, _ = parse_yesno(self._ask(f"{system}\n\n{user}"))
        return bool(yes)

    def compare_yesno(self, first: str, second: str, question: str) -> bool:
        """A yes/no question about two texts."""
        text = f"<first>\n{first}\n</first>\n<second>\n{second}\n</second>"
        return self.text_yesno(text, question)

    def yesno(self, question: str) -> bool:
        """A yes/no question with no text to read."""
        return self.text_yesno("", question)

    def score(self, text: str, rubric: str) -> float:
        """A 0..1 score of `text` against `rubric`; raises ValueError on an unreadable answer."""
        answer = self._ask(_rubric_prompt(rubric, text, ""))
        value, reason = parse_score(answer)
        self.decisions.append(
            {"rubric": rubric, "score": value, "motivation": reason, "raw": answer}
        )
        if value is None:
            raise ValueError(f"judge answer has no score in 0..1: {answer[:200]!r}")
        return value

    def drain_decisions(self) -> list[dict[str, Any]]:
        """Return and clear the decisions made so far (thinkingbox's `judge_motivation`)."""
        out, self.decisions = self.decisions, []
        return out


def _settle(task: asyncio.Task[str], done: concurrent.futures.Future[str]) -> None:
    """Hand a finished judge task's answer (or error) to the test's thread."""
    if task.cancelled():
        done.cancel()
    elif task.exception() is not None:
        done.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        done.set_result(task.result())
