"""The four conversation modes: standard, scripted turns, dynamic (simulator + checkpoints)
and code tests (query + simulated user, then a Python test function).

Each mode drives a Conversation and returns an Outcome; the runner turns it into a
CaseResult. Agent failures raise TurnFailed from the conversation and end the mode, except
in the scripted turns of a HoloDeck case, where the later turns still run (docs/holodeck.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from convlab.engine.codes import code_in
from convlab.engine.conversation import Conversation, status_of
from convlab.engine.events import CheckpointReached
from convlab.errors import TurnFailed
from convlab.model.blame import Blame, assertion_blame, blame_of
from convlab.model.conversation import Message
from convlab.model.records import AssertionResult, CheckpointResult, ErrorInfo
from convlab.model.suite import Turn, TurnInput
from convlab.model.tracebacks import error_info, error_text
from convlab.plan import SelectionError, resolve_selection

__all__ = ["MODES", "Outcome"]

DONE_MARKER = "<DONE>"


@dataclass
class Outcome:
    """What a mode concluded about its instance."""

    status: str
    error: str | None = None
    assertions: list[AssertionResult] = field(default_factory=list)
    checkpoints: list[CheckpointResult] = field(default_factory=list)
    finish_reason: str | None = None
    blame: Blame | None = None
    """What stopped the instance, classified where it was caught (None: the checks decided;
    convlab.model.blame.case_blame settles the instance's blame from both)."""
    error_info: ErrorInfo | None = None
    """The exception behind `error`, when user code raised one."""


def _first_problem(results: list[AssertionResult]) -> str | None:
    for r in results:
        if r.status in ("error", "failed"):
            name = r.label or r.id or r.kind
            return f"{name}: {r.error or r.message}"
    return None


async def run_standard(conv: Conversation) -> Outcome:
    """One call with the case's input (a history is allowed), then its checks."""
    case = conv.case
    user = [m.model_copy() for m in case.input or []]
    try:
        turn = await conv.send(user)
    except TurnFailed as exc:
        conv.finish_turn(conv.turns[-1], [])
        return Outcome("error", str(exc), blame=exc.blame, error_info=exc.info)
    results = await conv.check(case.assertions, turn, "turn")
    conv.finish_turn(turn, results)
    status = turn.status  # the checks' (the agent answered)
    return Outcome(status, None if status == "passed" else _first_problem(results))


def _user_message(turn: Turn, base: Path | None) -> Message:
    """The user text of a scripted turn, with attached files as `File:` blocks before it."""
    blocks = [_file_block(f.path, base) for f in turn.input.files]
    text = "\n\n".join([*blocks, turn.input.text]) if blocks else turn.input.text
    return Message(role="user", content=text)


def _file_block(path: str, base: Path | None) -> str:
    p = Path(path)
    if not p.is_absolute() and base is not None:
        p = base / p
    try:
        body = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        size = p.stat().st_size if p.exists() else 0
        body = f"(binary or unreadable file, {size} bytes)"
    return f"File: {path}\n{body}"


async def run_turns(conv: Conversation) -> Outcome:
    """Scripted turns in order: a failed check goes on, an error stops; then final checks.

    HoloDeck cases go on after an error too (see `_goes_on`); the case is then an error.
    """
    base = Path(conv.case.source.file).parent if conv.case.source else None
    previous = None
    stopped_by: dict[int, Blame] = {}
    """Turns whose agent call failed (HoloDeck goes on after them): whose fault it was."""
    for step in conv.inst.turns:
        meta: dict[str, object] = {}
        inp: TurnInput = step.input
        if inp.invalid is not None and conv.env.agent.strict_input:
            # intention-kernel's direct adapter checks a step's input when the turn is sent
            # (agentAdapter.ts `send`, strict inputSchema), not when the suite loads: the file
            # loads, and only the instances that send this input err. A host adapter (any
            # agent that is not `strict_input`) receives the input as it is.
            bad = f"EVALUATION_AGENT_INPUT_INVALID: {inp.invalid}"
            return _stop_with(conv, step, bad, "suite")  # the suite's input, not the agent's
        if inp.selection is not None:
            try:
                interaction = (
                    previous.observation.interaction if previous and previous.observation else None
                )
                meta["selected_option"] = resolve_selection(inp.selection, interaction)
            except SelectionError as exc:  # the reply offered no such option
                # the direct adapter's codes; a host adapter gets the selection as it is
                if conv.env.agent.strict_input:
                    return _stop_with(conv, step, str(exc), blame_of(exc, "agent"))
        try:
            turn = await conv.send([_user_message(step, base)], step_id=step.id, inp=inp, meta=meta)
        except TurnFailed as exc:
            conv.finish_turn(conv.turns[-1], [])
            if not _goes_on(conv, []):
                return Outcome("error", str(exc), blame=exc.blame, error_info=exc.info)
            stopped_by.setdefault(conv.turns[-1].index, exc.blame)
            previous = conv.turns[-1]
            continue
        results = await conv.check(step.assertions, turn, "turn")
        conv.finish_turn(turn, results)
        previous = turn
        if turn.status == "error" and not _goes_on(conv, results):
            # an error stops the remaining turns (a failure does not), except in HoloDeck
            return Outcome("error", f"turn {turn.index + 1}: {_first_problem(results)}")
    errored = next((t for t in conv.turns if t.status == "error"), None)
    if errored is not None:  # HoloDeck: later turns ran and were scored; the case errs
        why = errored.error or _first_problem(errored.assertions)
        return Outcome(
            "error", f"turn {errored.index + 1}: {why}", blame=stopped_by.get(errored.index)
        )
    # every step was recorded: the final checks run (intention-kernel's rule), even after a
    # failed step, but a failed step decides the case
    final = await conv.check(conv.case.assertions, None, "final")
    failed = next((t for t in conv.turns if t.status == "failed"), None)
    if failed is not None:
        return Outcome(
            "failed", f"turn {failed.index + 1}: {_first_problem(failed.assertions)}", final
        )
    status = status_of(final)
    return Outcome(status, None if status == "passed" else _first_problem(final), final)


def _goes_on(conv: Conversation, results: list[AssertionResult]) -> bool:
    """Whether the turns after an errored one still run: only in HoloDeck cases.

    HoloDeck 0.7.1 (`_run_multi_turn`) records an agent error and runs and scores the
    later turns; only a code grader with `fail_on_error: true` that errs stops them.
    Every other format stops at the first error, as its own system does.
    """
    source = conv.case.source
    if source is None or source.format != "yaml_cases":
        return False
    return not any(r.status == "error" and r.details.get("fail_on_error") for r in results)


def _stop_with(conv: Conversation, step: Turn, error: str, blame: Blame) -> Outcome:
    from convlab.model.records import TurnResult

    turn = TurnResult(
        index=len(conv.turns),
        step_id=step.id,
        input=step.input,
        status="error",
        error=error,
        code=code_in(error),
    )
    conv.turns.append(turn)
    conv.finish_turn(turn, [])
    return Outcome("error", error, blame=blame)


def _simulator(conv: Conversation) -> object:
    """The case's own simulator (`use`) when it resolves, else the run's."""
    use = conv.case.simulator.use if conv.case.simulator else None
    # a convlab spec must resolve; a foreign id (e.g. a Yao agent name) leaves the user
    # to the run's simulator
    if use and (":" in use or use == "scripted"):
        try:
            return conv.env.case_simulator(use)
        except Exception as exc:
            why = f"simulator {use!r}: {error_text(exc)}"
            raise TurnFailed(why, blame_of(exc, "simulator"), error_info(exc)) from exc
    if conv.env.simulator is None:
        raise TurnFailed(
            "no user simulator configured: pass run(simulator=...) (a function, an agent or "
            "'scripted')",
            "simulator",
        )
    return conv.env.simulator


def _set_persona(conv: Conversation) -> None:
    spec = conv.case.simulator
    if spec is not None:
        conv.ctx.persona, conv.ctx.goal = spec.persona, spec.goal
    elif conv.case.user_context:
        conv.ctx.goal = conv.case.user_context


async def _simulate(conv: Conversation, sim: object, extra: dict[str, object]) -> tuple[str, bool]:
    """Ask the simulator for the next user message (from the user's point of view)."""
    _set_persona(conv)
    conv.ctx.metadata = {**extra, **(conv.case.simulator.metadata if conv.case.simulator else {})}
    try:
        out = await sim.simulate(list(conv.messages), conv.ctx)  # type: ignore[attr-defined]
    except Exception as exc:
        why = f"simulator error: {error_text(exc)}"
        raise TurnFailed(why, blame_of(exc, "simulator"), error_info(exc)) from exc
    return str(out.message), bool(out.goal_achieved)


async def run_dynamic(conv: Conversation) -> Outcome:
    """Simulator-driven turns until every required checkpoint is reached (Yao's dynamic
    runner; docs/yao.md)."""
    case = conv.case
    checkpoints = {
        cp.id: CheckpointResult(id=cp.id, required=cp.required) for cp in case.checkpoints
    }
    conv.checkpoints = list(checkpoints.values())
    max_turns = case.limits.max_turns or 20
    try:
        sim = None if case.input else _simulator(conv)
        for n in range(1, max_turns + 1):
            if n == 1 and case.input:
                user = [m.model_copy() for m in case.input]
            else:
                sim = sim or _simulator(conv)
                reached = [k for k, v in checkpoints.items() if v.reached]
                text, done = await _simulate(
                    conv,
                    sim,
                    {
                        "turn_number": n,
                        "max_turns": max_turns,
                        "checkpoints_reached": reached,
                        "checkpoints_pending": [k for k in checkpoints if k not in reached],
                    },
                )
                if done:
                    return _goal_outcome(checkpoints)
                if not text.strip():
                    raise TurnFailed(
                        "simulator error: simulator returned empty message", "simulator"
                    )
                user = [Message(role="user", content=text)]
            turn = await conv.send(user)
            conv.finish_turn(turn, [])
            await _check_checkpoints(conv, checkpoints, turn)
            if all(v.reached for v in checkpoints.values() if v.required):
                return Outcome("passed", checkpoints=list(checkpoints.values()))
    except TurnFailed as exc:
        if conv.turns and conv.turns[-1].status == "error":
            conv.finish_turn(conv.turns[-1], [])
        return Outcome(
            "error",
            str(exc),
            checkpoints=list(checkpoints.values()),
            blame=exc.blame,
            error_info=exc.info,
        )
    missing = [k for k, v in checkpoints.items() if v.required and not v.reached]
    return Outcome(
        "failed",
        f"max turns ({max_turns}) exceeded without reaching all checkpoints "
        f"(missing: {', '.join(missing)})",
        checkpoints=list(checkpoints.values()),
    )


def _goal_outcome(checkpoints: dict[str, CheckpointResult]) -> Outcome:
    missing = [k for k, v in checkpoints.items() if v.required and not v.reached]
    if not missing:
        return Outcome("passed", checkpoints=list(checkpoints.values()), finish_reason="user_done")
    return Outcome(
        "failed",
        "simulator signaled goal achieved but not all required checkpoints reached "
        f"(missing: {', '.join(missing)})",
        checkpoints=list(checkpoints.values()),
        finish_reason="user_done",
    )


async def _check_checkpoints(
    conv: Conversation, checkpoints: dict[str, CheckpointResult], turn: object
) -> None:
    """File order; `after` must be reached first (unknown ids ignored); same-turn chaining."""
    for cp in conv.case.checkpoints:
        state = checkpoints[cp.id]
        if state.reached:
            continue
        if any(a in checkpoints and not checkpoints[a].reached for a in cp.after):
            continue
        if cp.assertion is None:
            passed, message = True, None
        else:
            [res] = await conv.check([cp.assertion], turn, "checkpoint")  # type: ignore[arg-type]
            if res.status == "error":  # e.g. no judge configured: not "unreached", an error
                state.message = res.error or res.message
                why = f"checkpoint {cp.id}: {state.message}"
                raise TurnFailed(why, assertion_blame(res) or "suite")
            passed, message = res.passed, res.message
        if passed:
            state.reached = state.passed = True
            state.message = message  # an earlier turn's "not yet" no longer describes it
            state.reached_at_turn = turn.index + 1  # type: ignore[attr-defined]
            if conv.env.listening:
                conv.env.emit(CheckpointReached(conv.inst.key, cp.id, state.reached_at_turn))
        elif state.message is None:
            state.message = message


async def run_code(conv: Conversation) -> Outcome:
    """The query, a simulated user while `user_context` is set, then the Python test."""
    case = conv.case
    user = [m.model_copy() for m in case.input or []]
    if case.metadata.get("format_query"):
        user = [_format(m, conv) for m in user]
    finish = "no_user_llm"
    try:
        turn = await conv.send(user)
        conv.finish_turn(turn, [])
        if case.user_context and conv.env.simulator is not None:
            finish = await _simulated_user(conv)
    except TurnFailed as exc:
        if conv.turns and conv.turns[-1].status == "error":
            conv.finish_turn(conv.turns[-1], [])
        return Outcome(
            "error", str(exc), finish_reason="agent_error", blame=exc.blame, error_info=exc.info
        )
    results = await conv.check(case.assertions, None, "final")
    status = status_of(results)
    return Outcome(
        status,
        None if status == "passed" else _first_problem(results),
        results,
        finish_reason=finish,
    )


async def _simulated_user(conv: Conversation) -> str:
    sim = _simulator(conv)
    limit = conv.case.limits.max_user_turns
    limit = 10 if limit is None else limit
    for n in range(1, limit + 1):
        last = conv.turns[-1].observation
        if last is not None and DONE_MARKER in (last.text or ""):
            return "agent_done"
        text, done = await _simulate(conv, sim, {"turn_number": n, "max_turns": limit})
        if done or not text.strip():
            return "user_done"
        turn = await conv.send([Message(role="user", content=text)])
        conv.finish_turn(turn, [])
    return "user_limit"


def _format(message: Message, conv: Conversation) -> Message:
    if not isinstance(message.content, str):
        return message
    try:
        return message.model_copy(update={"content": message.content.format(init=conv.ctx.world)})
    except (KeyError, IndexError, ValueError):
        return message


MODES: dict[str, Callable[[Conversation], Awaitable[Outcome]]] = {
    "standard": run_standard,
    "turns": run_turns,
    "dynamic": run_dynamic,
    "code": run_code,
}
