"""HoloDeck evaluation metrics: the `metric` kind (HoloDeck's models/evaluation.py and
lib/evaluators/deterministic.py).

Deterministic metrics compare the reply with the turn's ground truth: `equality`
(with `case_insensitive`, `strip_punctuation`, `strip_whitespace`), `numeric` (with
`absolute_tolerance` 1e-6, `relative_tolerance`, `accept_percent`,
`accept_thousands_separators`), and simple `bleu` / `rouge` / `meteor` (see
convlab.checks._textmetrics). The LLM metrics (groundedness, relevance, coherence, fluency,
`geval` criteria, `rag` metrics) ask the run's judge for a 0..1 score.

A metric passes at or above its `threshold` when one is set; otherwise equality/numeric
pass on a match, the overlap metrics on a score above 0, and judged metrics at 0.5.
Multi-turn rule: on a turn with an empty reply no metric runs, and a metric that needs a
ground truth (or retrieval context) the turn lacks is skipped; single-turn cases fail it
(HoloDeck 0.7.1 runs no metric on any empty reply, so there an empty single-turn reply
passes: convlab deliberately keeps the failure, docs/holodeck.md).

Judged metrics honour `timeout_ms` (per judge call), `retry_on_failure` (extra judge
calls when one fails or gives no score) and, for geval, `strict_mode` (score 1 or 0,
threshold 1). HoloDeck validates the first two and ignores them; convlab applies them.
"""

from __future__ import annotations

import asyncio
import json
import re
import string
from typing import Any

from convlab.checks import _textmetrics as overlap
from convlab.checks._core import NO_JUDGE, CheckContext, error_result, kind, result, skipped_result
from convlab.checks._values import reply_text, show
from convlab.checks.judge import ask, parse_score
from convlab.model.assertions import Metric
from convlab.model.blame import Blame, blame_of
from convlab.model.records import AssertionResult
from convlab.model.suite import Turn
from convlab.model.tracebacks import error_text

__all__ = ["graded_text", "ground_truth_of", "metric", "parse_number"]

_OVERLAP = {"bleu": overlap.bleu, "meteor": overlap.meteor}
_DETERMINISTIC = {"equality", "numeric", "bleu", "rouge", "meteor"}
_NEEDS_TRUTH = _DETERMINISTIC | {"contextual_precision", "contextual_recall"}
_NEEDS_CONTEXT = {
    "groundedness",
    "faithfulness",
    "contextual_precision",
    "contextual_recall",
    "contextual_relevancy",
}
_DEFINITIONS = {
    "groundedness": "every claim in the response is supported by the retrieved context",
    "relevance": "the response addresses what the user asked",
    "coherence": "the response is logically organised and consistent",
    "fluency": "the response's language is grammatical and natural",
    "faithfulness": "the response makes no claim the retrieved context does not support",
    "answer_relevancy": "the response is relevant to the input",
    "contextual_precision": "the context pieces relevant to the expected answer come first",
    "contextual_recall": "the expected answer can be attributed to the retrieved context",
    "contextual_relevancy": "the retrieved context is relevant to the input",
}
_THOUSANDS = ",_\u00a0\u202f"
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def ground_truth_of(spec: Metric, ctx: CheckContext) -> str | None:
    """The spec's ground truth, else the scripted turn's, else `ctx.extra["ground_truth"]`."""
    if spec.ground_truth is not None:
        return spec.ground_truth
    turn = _turn(ctx)
    if turn is not None and turn.ground_truth is not None:
        return turn.ground_truth
    value = ctx.extra.get("ground_truth")
    return str(value) if isinstance(value, str) else None


def _turn(ctx: CheckContext) -> Turn | None:
    case = ctx.case
    if case is not None and case.mode == "turns" and 0 <= ctx.turn_index < len(case.turns):
        return case.turns[ctx.turn_index]
    return None


def _retrieval(ctx: CheckContext) -> list[str] | None:
    turn = _turn(ctx)
    if turn is not None and turn.retrieval_context:
        return list(turn.retrieval_context)
    value = ctx.extra.get("retrieval_context")
    return list(value) if isinstance(value, list) else None


def _params(spec: Metric) -> set[str]:
    value = spec.options.get("evaluation_params") or []
    return set(value) if spec.type == "geval" else set()


def _needs_truth(spec: Metric) -> bool:
    return spec.metric in _NEEDS_TRUTH or "expected_output" in _params(spec)


def _needs_context(spec: Metric) -> bool:
    return spec.metric in _NEEDS_CONTEXT or bool({"context", "retrieval_context"} & _params(spec))


def graded_text(response: str, path: str | None) -> tuple[str | None, str | None]:
    """(text to grade, problem): the reply, or the scalar at `response_path` as `str(leaf)`."""
    if not path:
        return response, None
    try:
        cursor: Any = json.loads(response)
    except ValueError:
        return None, f"response_path {path!r}: the response is not a JSON document"
    for key, index in re.findall(r"([A-Za-z_][\w-]*)|\[(\d+)\]", path):
        if key:
            if not isinstance(cursor, dict) or key not in cursor:
                return None, f"response_path {path!r}: key {key!r} not found"
            cursor = cursor[key]
        elif not isinstance(cursor, list) or int(index) >= len(cursor):
            return None, f"response_path {path!r}: no item [{index}]"
        else:
            cursor = cursor[int(index)]
    if isinstance(cursor, dict | list):
        shape = "an object" if isinstance(cursor, dict) else "an array"
        return None, f"response_path {path!r}: leads to {shape}, not a value"
    return str(cursor), None


def parse_number(text: str, *, percent: bool, thousands: bool) -> tuple[float | None, str | None]:
    """(value, problem) as HoloDeck's numeric metric parses: `%` and separators only on request."""
    raw = text.strip()
    if not raw:
        return None, "value is empty"
    is_percent = raw.endswith("%")
    if is_percent and not percent:
        return None, f"percent sign in {raw!r} but accept_percent is off"
    if is_percent:
        raw = raw[:-1].strip()
    if thousands:
        raw = "".join(ch for ch in raw if ch not in _THOUSANDS)
    elif any(ch in raw for ch in _THOUSANDS):
        return None, f"thousands separator in {raw!r} but accept_thousands_separators is off"
    try:
        value = float(raw)
    except ValueError:
        return None, f"could not parse {text!r} as a number"
    return (value / 100 if is_percent else value), None


def _normalize(text: str, opts: dict[str, Any]) -> str:
    if opts.get("case_insensitive"):
        text = text.casefold()
    if opts.get("strip_punctuation"):
        text = text.translate(_PUNCTUATION)
    if opts.get("strip_whitespace"):
        text = re.sub(r"\s+", " ", text).strip()
    return text


def _equality(spec: Metric, text: str, truth: str) -> tuple[float, bool, str]:
    same = _normalize(text, spec.options) == _normalize(truth, spec.options)
    msg = (
        "equality: the response equals the ground truth"
        if same
        else (f"equality: expected {show(truth)}, got {show(text)}")
    )
    return float(same), same, msg


def _numeric(spec: Metric, text: str, truth: str) -> tuple[float, bool, str]:
    opts = spec.options
    flags = {
        "percent": bool(opts.get("accept_percent")),
        "thousands": bool(opts.get("accept_thousands_separators")),
    }
    got, problem = parse_number(text, **flags)
    want, problem2 = parse_number(truth, **flags)
    if got is None or want is None:
        return 0.0, False, f"numeric: {problem or problem2}"
    abs_tol = float(opts.get("absolute_tolerance", 1e-6))
    rel_tol = float(opts.get("relative_tolerance", 0.0))
    diff = abs(got - want)
    ok = diff <= abs_tol or (rel_tol > 0 and diff <= rel_tol * abs(want))
    if ok:
        return 1.0, True, f"numeric: {got:g} matches {want:g} (difference {diff:g})"
    tol = f"absolute {abs_tol:g}" + (f", relative {rel_tol:g}" if rel_tol else "")
    return 0.0, False, f"numeric: expected {want:g}, got {got:g} (difference {diff:g} > {tol})"


def _overlap(spec: Metric, text: str, truth: str) -> tuple[float, bool, str]:
    if spec.metric == "rouge":
        score = overlap.rouge(text, truth, str(spec.options.get("variant", "rougeL")))
    else:
        score = _OVERLAP[spec.metric](text, truth)
    return score, score > 0, f"{spec.metric} score {score:.3f}"


def _deterministic(spec: Metric, response: str, truth: str | None) -> AssertionResult:
    text, problem = graded_text(response, spec.response_path)
    if problem is not None or text is None:
        return result(spec, False, problem or "", expected=truth, actual=response, score=0.0)
    if truth is None:
        msg = f"metric '{spec.metric}' needs a ground_truth to compare with"
        return result(spec, False, msg, actual=text, score=0.0)
    grade = {"equality": _equality, "numeric": _numeric}.get(spec.metric, _overlap)
    score, ok, msg = grade(spec, text, truth)
    if spec.threshold is not None:
        ok = score >= spec.threshold
        msg += f" (threshold {spec.threshold:g})"
    return result(spec, ok, msg, expected=truth, actual=text, score=score)


def _prompt(spec: Metric, ctx: CheckContext, response: str, truth: str | None) -> str:
    if spec.type == "geval":
        steps = spec.options.get("evaluation_steps") or []
        criteria = spec.options.get("criteria", "")
        what = f"the response meets these criteria: {criteria}"
        what += "".join(f"\n- {step}" for step in steps)
    else:
        what = _DEFINITIONS.get(spec.metric, f"the response does on {spec.metric}")
    custom = spec.options.get("custom_prompt")
    parts = [str(custom) if custom else f"You are a judge. Score how well {what}."]
    users = [m for m in ctx.messages if m.role == "user"]
    user = ctx.input.text if ctx.input is not None else (users[-1].text() if users else "")
    parts.append(f"<input>\n{user}\n</input>\n<response>\n{response}\n</response>")
    if truth is not None:
        parts.append(f"<expected_output>\n{truth}\n</expected_output>")
    context = _retrieval(ctx)
    if context:
        parts.append("<retrieval_context>\n" + "\n---\n".join(context) + "\n</retrieval_context>")
    parts.append(
        'Answer with JSON only: {"score": <a number from 0 to 1>, "reason": "<one sentence>"}'
    )
    return "\n\n".join(parts)


async def _ask_judge(spec: Metric, judge: Any, prompt: str) -> tuple[str | None, str | None, Blame]:
    """(answer with a score, problem): `timeout_ms` bounds each try, `retry_on_failure` adds tries.

    HoloDeck 0.7.1 validates both options and then ignores them; convlab applies them to
    the judge call, the only part of a metric that can hang or answer unusably. A try
    fails when the judge raises, times out or gives no score in 0..1.
    """
    timeout_ms = spec.options.get("timeout_ms")
    tries = 1 + int(spec.options.get("retry_on_failure") or 0)
    problem: str | None = None
    blame: Blame = "judge"
    for _ in range(tries):
        try:
            if timeout_ms:
                answer = await asyncio.wait_for(ask(judge, prompt), float(timeout_ms) / 1000)
            else:
                answer = await ask(judge, prompt)
        except TimeoutError:
            problem = f"judge timed out after {timeout_ms} ms (timeout_ms)"
            blame = "infrastructure"
            continue
        except Exception as exc:
            problem = f"judge failed: {error_text(exc)}"
            blame = blame_of(exc, "judge")
            continue
        if parse_score(answer)[0] is not None:
            return answer, None, "judge"
        problem = f"judge answer has no score in 0..1: {answer[:200]!r}"
        blame = "judge"
    if tries > 1:
        problem = f"{problem} (after {tries} tries, retry_on_failure)"
    return None, problem, blame


async def _judged(
    spec: Metric, ctx: CheckContext, response: str, truth: str | None
) -> AssertionResult:
    if ctx.judge is None:
        return error_result(spec, f"metric '{spec.metric}' needs a judge; {NO_JUDGE}", "judge")
    if spec.type == "geval" and not spec.options.get("criteria"):
        return error_result(spec, "a geval metric needs 'criteria'")
    prompt = _prompt(spec, ctx, response, truth)
    answer, problem, blame = await _ask_judge(spec, ctx.judge, prompt)
    if answer is None:
        return error_result(spec, problem or "judge failed", blame, details={"prompt": prompt})
    score, reason = parse_score(answer)
    assert score is not None  # _ask_judge returns only answers with a score
    details: dict[str, Any] = {"judge_answer": answer, "prompt": prompt}
    threshold = 0.5 if spec.threshold is None else spec.threshold
    if spec.type == "geval" and spec.options.get("strict_mode"):
        # deepeval's GEval strict_mode, which HoloDeck passes on: 1 for a perfect score,
        # else 0, and the threshold becomes 1
        score, threshold = (1.0 if score >= 1.0 else 0.0), 1.0
        details["strict_mode"] = True
    msg = f"{spec.metric} score {score:g} (threshold {threshold:g})" + (
        f": {reason}" if reason else ""
    )
    return result(
        spec,
        score >= threshold,
        msg,
        expected=f">= {threshold:g}",
        actual=score,
        score=score,
        details=details,
    )


@kind("metric")
async def metric(spec: Metric, ctx: CheckContext) -> AssertionResult:
    """A HoloDeck evaluation metric on the turn's reply (standard, geval or rag).

    standard: equality, numeric, bleu, rouge, meteor (against the ground truth, no LLM),
    groundedness, relevance, coherence, fluency (judged); geval: `criteria` judged;
    rag: faithfulness, answer_relevancy, contextual_* (judged). `response_path` grades one
    value of a JSON reply. Options (case_insensitive, absolute_tolerance, ...) as HoloDeck.
    """
    response = reply_text(ctx.observation)
    truth = ground_truth_of(spec, ctx)
    if spec.skip_without_ground_truth or ctx.multi_turn:
        if response == "":
            return skipped_result(spec, "the reply is empty: no metric runs on an empty turn")
        if _needs_truth(spec) and truth is None:
            return skipped_result(spec, f"no ground_truth on this turn for '{spec.metric}'")
        if _needs_context(spec) and not _retrieval(ctx):
            return skipped_result(spec, f"no retrieval_context on this turn for '{spec.metric}'")
    if spec.type == "standard" and spec.metric in _DETERMINISTIC:
        return _deterministic(spec, response, truth)
    if _needs_context(spec) and not _retrieval(ctx):
        return result(spec, False, f"metric '{spec.metric}' needs a retrieval_context", score=0.0)
    return await _judged(spec, ctx, response, truth)
