"""`run.why()`: one plain sentence per case saying which fork decides whether it passes.

"Runs that called lookup_policy at turn 2 passed 9 of 10; runs that skipped it passed 1 of 5
(p = 0.004)." The fork is the case's deciding branch (convlab.analysis.divergence: the
smallest Holm-corrected p-value); the sentence names what differs there, tool calls first,
then checkpoints, an error, the checks, what the user said, where the conversation ended.
Turns are counted from 1, as people read them; the p-value is the corrected one.
"""

from __future__ import annotations

from collections.abc import Sequence

from convlab._readable import shorten
from convlab.analysis.divergence import CaseTree, Node, p_text
from convlab.analysis.trajectory import END, Step, call_text, ending

__all__ = ["case_why", "contrast", "run_why"]

_SAID = 60
_ALPHA = 0.05


def _names(step: Step) -> set[str]:
    return {c.name for c in step.calls}


def _joined(names: Sequence[str]) -> str:
    return " and ".join(sorted(names)) if len(names) < 3 else ", ".join(sorted(names))


def _tools(a: Step, others: Sequence[Step]) -> tuple[str, str] | None:
    theirs = set().union(*(_names(s) for s in others))
    only_a = _names(a) - theirs
    if only_a:
        it = "it" if len(only_a) == 1 else "them"
        return f"that called {_joined(list(only_a))}", f"that skipped {it}"
    in_all = set.intersection(*(_names(s) for s in others)) - _names(a)
    if in_all:
        it = "it" if len(in_all) == 1 else "them"
        return f"that skipped {_joined(list(in_all))}", f"that called {it}"
    mine = [c for c in a.calls if all(c not in s.calls for s in others)]
    if mine:
        return f"that called {call_text(mine[0])}", f"that called {mine[0].name} otherwise"
    if any(a.calls != s.calls for s in others):
        return "that made their calls in this order", "that made them in another"
    return None


def _checkpoints(a: Step, others: Sequence[Step]) -> tuple[str, str] | None:
    for cp in a.reached:
        if all(cp not in s.reached for s in others):
            return f"that reached checkpoint {cp}", "that did not"
    for cp in others[0].reached:
        if cp not in a.reached and all(cp in s.reached for s in others):
            return f"that did not reach checkpoint {cp}", "that did"
    return None


def _outcome(a: Step, others: Sequence[Step]) -> tuple[str, str] | None:
    if a.outcome and all(s.outcome != a.outcome for s in others):
        return f"whose agent turn ended in {ending(a)}", "whose agent answered"
    if not a.outcome and all(s.outcome for s in others):
        return "whose agent answered", "whose agent turn failed"
    return None


def _checks(a: Step, others: Sequence[Step]) -> tuple[str, str] | None:
    for i, (name, status) in enumerate(a.checks):
        if all(i < len(s.checks) and s.checks[i][1] != status for s in others):
            if status == "passed":
                return f"whose reply passed the check {name}", "whose reply failed it"
            got = "failed" if status == "failed" else f"got {status} on"
            return f"whose reply {got} the check {name}", "whose reply passed it"
    return None


def _user(a: Step, others: Sequence[Step]) -> tuple[str, str]:
    if a.key() == END.key():
        return "that ended", "that went on"
    if all(s.key() == END.key() for s in others):
        return "that went on", "that ended"
    text, _, variant = a.user.partition("\x00")
    if variant and all(s.user.partition("\x00")[0] == text for s in others):
        return f"with variant {variant}", "with another variant"
    return f"where the user said “{shorten(a.said, _SAID)}”", "where the user said something else"


def contrast(a: Step, others: Sequence[Step], side: str) -> tuple[str, str]:
    """How runs that took step `a` differ from runs that took one of `others`, as two
    phrases (`that called lookup_policy`, `that skipped it`)."""
    if side == "user":
        return _user(a, others)
    for rule in (_tools, _checkpoints, _outcome, _checks):
        found = rule(a, others)
        if found is not None:
            return found
    return "that took this way", "that took another"


def _passed(nodes: Sequence[Node]) -> str:
    return f"passed {sum(n.passed for n in nodes)} of {sum(n.runs for n in nodes)}"


def _no_fork(tree: CaseTree) -> str:
    head = f"All {tree.runs} runs took the same path, yet {tree.passed} passed"
    finals: dict[str, list[str]] = {}
    for inst in tree.instances:
        for name, status in inst.final:
            finals.setdefault(name, []).append(status)
    for name, statuses in finals.items():
        if len(set(statuses)) > 1:
            ok = statuses.count("passed")
            return (
                f"{head}: the difference is in what the path does not record; the case check "
                f"{name} passed in {ok} of {len(statuses)} runs."
            )
    return f"{head}: the difference is in what the path does not record (reply wording, timing)."


def case_why(tree: CaseTree) -> str:
    """One sentence for the case: the deciding fork when its runs disagree."""
    n, c = tree.runs, tree.passed
    if not tree.flaky:
        word = "passed" if c == n else "failed"
        if n == 1:
            return f"The one run {word}."
        ways = "one path" if tree.paths == 1 else f"{tree.paths} paths"
        return f"All {n} runs {word}; they took {ways}."
    branch = tree.deciding()
    if branch is None:
        return _no_fork(tree)
    fork = branch.node.parent
    assert fork is not None
    kids = fork.children
    if len(kids) == 2:
        first = max(kids, key=lambda k: (k.passed / k.runs, k.runs))
    else:
        first = branch.node
    rest = [k for k in kids if k is not first]
    said, other = contrast(first.step, [k.step for k in rest], branch.side)
    p = tree.p_holm[branch.test]
    notes = [p_text(p)]
    if branch.side == "user":
        notes.append("a fork on the user's side")
    if p >= _ALPHA:
        notes.append("which could be chance")
    return (
        f"Runs {said} at turn {fork.turn + 2} {_passed([first])}; "
        f"runs {other} {_passed(rest)} ({', '.join(notes)})."
    )


def run_why(trees: dict[str, CaseTree], case_id: str | None) -> str:
    """`run.why()`: the case's sentence, or with no case one line per flaky case."""
    if case_id is not None:
        tree = trees.get(case_id)
        return case_why(tree) if tree else "No run of this case reached a verdict that counts."
    lines = [f"{cid}: {case_why(tree)}" for cid, tree in trees.items() if tree.flaky]
    return "\n".join(lines) or "No case is flaky: each passed in all its runs or in none."
