"""Why a case is flaky: its repeated runs grouped by trajectory into a prefix tree.

Each counted run of a case (the runs `Run.stability()` counts: the agent's verdicts) is a
trajectory (convlab.analysis.trajectory). The runs are grouped turn by turn into a prefix
tree; a *fork* is a turn where runs that agreed so far go different ways, on the user's side
(the simulated user said something else, another variant, the conversation ended) or on the
agent's (other tool calls, other check outcomes, a checkpoint). Each way out of a fork is a
*branch*: its runs, how many passed, and Fisher's exact test of branch against pass (a
two-way fork is one test; a wider fork tests each branch against its siblings), Holm-corrected
over all the tests of the case. The *main path* is the most common whole trajectory.

Pure data: a frame (`divergence_frame`), per-case counts for `Run.stability()` (`path_counts`)
and one plain sentence per case (`why`); the views draw from `case_trees`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from convlab.analysis.frames import in_run_order, suite_order
from convlab.analysis.stats import CountErrorsAs, counting_mode, counts_as_run, fisher_exact, holm
from convlab.analysis.trajectory import (
    END,
    NOTHING_READ,
    Step,
    StepTable,
    Trajectory,
    describe,
    read_arguments,
)
from convlab.errors import UnknownNameError
from convlab.model.records import CaseResult
from convlab.model.results import Results

if TYPE_CHECKING:
    import pandas as pd

    from convlab.model.run import Run

__all__ = [
    "DIVERGENCE_COLUMNS",
    "Branch",
    "CaseTree",
    "Instance",
    "Node",
    "case_instances",
    "case_trees",
    "contrasting_pair",
    "divergence_frame",
    "known_case",
    "p_text",
    "path_counts",
    "run_divergence",
]

DIVERGENCE_COLUMNS = (
    "case_id",
    "branch",
    "parent",
    "fork_turn",
    "side",
    "step",
    "runs",
    "passed",
    "pass_rate",
    "main",
    "path",
    "p_value",
    "p_holm",
)
"""`run.divergence()`'s columns: `branch` numbers a case's branches from 0 (the tree read
depth first, the most common way first), `parent` the branch it forks from (NA at the first
fork), `fork_turn` the 0-based turn where it leaves its siblings (NA for a case with one
path), `side` `agent` or `user`, `step` what the branch did at that turn, `pass_rate` in
percent, `main` whether it is on the main path, `path` the branch's way in words."""


@dataclass(slots=True)
class Instance:
    """One counted run of a case: its key, whether it passed, its trajectory."""

    key: tuple[str, str, int, int]
    passed: bool
    steps: Trajectory
    final: tuple[tuple[str, str], ...] = ()
    """Each case-scope assertion as (its name, its status): outcomes outside the path."""


@dataclass(slots=True, eq=False)
class Node:
    """The runs that took the same way up to `turn` (the root: turn -1, before turn 0)."""

    turn: int
    step: Step
    members: list[int] = field(default_factory=list)
    """The runs through this node, as indexes into `CaseTree.instances`."""
    passed: int = 0
    children: list[Node] = field(default_factory=list)
    parent: Node | None = None
    ways: dict[int, Node] = field(default_factory=dict)
    """The children by the number of the step they took (convlab.analysis.trajectory)."""

    @property
    def runs(self) -> int:
        """How many runs took this way."""
        return len(self.members)

    @property
    def is_fork(self) -> bool:
        """Runs through this node go more than one way at the next turn."""
        return len(self.children) > 1

    def line(self) -> list[Node]:
        """The node's way from the first turn to it, then on along its most common
        continuation to the end."""
        way: list[Node] = []
        node: Node | None = self
        while node is not None and node.turn >= 0:
            way.append(node)
            node = node.parent
        way.reverse()
        down = self
        while down.children:
            down = down.children[0]
            way.append(down)
        return way


@dataclass(slots=True)
class Branch:
    """One way out of a fork, with its test."""

    number: int
    node: Node
    parent: int | None
    """The branch this one forks from (None at the case's first fork)."""
    side: str
    test: int
    """Which of the case's tests it is in (`CaseTree.p_values`)."""


@dataclass(slots=True)
class CaseTree:
    """A case's runs as a prefix tree, its forks' branches and their tests."""

    case_id: str
    instances: list[Instance]
    root: Node
    branches: list[Branch]
    p_values: list[float]
    p_holm: list[float]
    main: Node
    """The leaf of the most common whole trajectory."""
    paths: int
    """How many distinct whole trajectories the runs took."""

    @property
    def runs(self) -> int:
        """The case's counted runs."""
        return self.root.runs

    @property
    def passed(self) -> int:
        """How many of them passed."""
        return self.root.passed

    @property
    def flaky(self) -> bool:
        """Some runs passed and some did not."""
        return 0 < self.passed < self.runs

    @property
    def main_path_share(self) -> float:
        """The share of runs on the main path (0..1)."""
        return self.main.runs / self.runs if self.runs else math.nan

    def main_line(self) -> list[Node]:
        """The main path's nodes, from the first turn to its end."""
        return self.main.line()

    def on_main(self, node: Node) -> bool:
        """Whether `node` lies on the main path."""
        walk: Node | None = self.main
        while walk is not None and walk.turn > node.turn:
            walk = walk.parent
        return walk is node

    def deciding(self) -> Branch | None:
        """The branch of the fork that best tells passing runs from failing ones: the
        smallest corrected p-value (then the earliest turn, then the better pass rate)."""
        if not self.branches:
            return None
        return min(
            self.branches,
            key=lambda b: (self.p_holm[b.test], b.node.turn, -_rate(b.node), -b.node.runs),
        )


def _rate(node: Node) -> float:
    return node.passed / node.runs if node.runs else math.nan


def _leaves(node: Node) -> Iterator[Node]:
    if not node.children:
        yield node
    for child in node.children:
        yield from _leaves(child)


def _grow(instances: Sequence[Instance], steps: Sequence[Step]) -> Node:
    root = Node(-1, END)
    for i, inst in enumerate(instances):
        node = root
        node.members.append(i)
        node.passed += inst.passed
        for number in inst.steps:
            child = node.ways.get(number)
            if child is None:
                child = node.ways[number] = Node(node.turn + 1, steps[number], parent=node)
                node.children.append(child)
            node = child
            node.members.append(i)
            node.passed += inst.passed
    _sort(root)
    return root


def _sort(node: Node) -> None:
    node.children.sort(key=lambda c: (-c.runs, c.members[0]))
    for child in node.children:
        _sort(child)


def _side(fork: Node) -> str:
    users = {c.step.user for c in fork.children}
    return "user" if len(users) > 1 else "agent"


def _fisher(node: Node, others: Iterable[Node]) -> float:
    rest = list(others)
    n, c = sum(o.runs for o in rest), sum(o.passed for o in rest)
    return fisher_exact(node.passed, node.runs - node.passed, c, n - c)


def _forks(root: Node) -> tuple[list[Branch], list[float]]:
    branches: list[Branch] = []
    p_values: list[float] = []

    def visit(node: Node, parent: int | None) -> None:
        if not node.is_fork:
            for child in node.children:
                visit(child, parent)
            return
        side = _side(node)
        pair = len(node.children) == 2
        if pair:
            p_values.append(_fisher(node.children[0], node.children[1:]))
        mine = []
        for child in node.children:
            if not pair:
                p_values.append(_fisher(child, (o for o in node.children if o is not child)))
            branch = Branch(len(branches), child, parent, side, len(p_values) - 1)
            branches.append(branch)
            mine.append(branch)
        for branch in mine:
            visit(branch.node, branch.number)

    visit(root, None)
    return branches, p_values


def grow_case(case_id: str, instances: list[Instance], steps: Sequence[Step]) -> CaseTree:
    """A case's prefix tree, forks, tests and main path (`steps`: the instances' steps by
    number, convlab.analysis.trajectory.StepTable)."""
    root = _grow(instances, steps)
    branches, p_values = _forks(root)
    leaves = list(_leaves(root))
    main = min(leaves, key=lambda n: (-n.runs, n.members[0]))
    return CaseTree(case_id, instances, root, branches, p_values, holm(p_values), main, len(leaves))


def _instances(
    run: Run, mode: CountErrorsAs, cases: Collection[str] | None = None
) -> tuple[dict[str, list[Instance]], StepTable]:
    """Each case's counted runs (latest record per instance key), in run order, and the
    table of their steps."""
    suite = run.suite.cases if run.suite is not None else []
    reads = {case.id: read_arguments(case) for case in suite}
    table = StepTable()

    def made(r: CaseResult) -> tuple[tuple[str, str, int, int], Instance | None]:
        if (cases is not None and r.case_id not in cases) or not counts_as_run(
            r.status, r.blame, mode
        ):
            return r.key, None
        read = reads.get(r.case_id, NOTHING_READ)
        final = tuple((a.label or a.id or a.kind, a.status) for a in r.assertions)
        return r.key, Instance(r.key, r.status == "passed", table.trajectory(r, read), final)

    results = run.results
    pairs = results.mapped(made) if isinstance(results, Results) else map(made, results)
    latest = dict(pairs)
    out: dict[str, list[Instance]] = {}
    for inst in in_run_order(run, latest):
        if inst is not None:
            out.setdefault(inst.key[0], []).append(inst)
    return out, table


def case_trees(
    run: Run, cases: str | Collection[str] | None = None, count_errors_as: str = "failed"
) -> dict[str, CaseTree]:
    """Every case's tree (only those of `cases`, a case id or several, when given), in suite
    order; a case with no counted run has none."""
    mode = counting_mode(count_errors_as)
    groups, table = _instances(run, mode, {cases} if isinstance(cases, str) else cases)
    return {cid: grow_case(cid, insts, table.steps) for cid, insts in groups.items()}


def case_instances(
    run: Run, case_id: str, count_errors_as: str = "failed"
) -> list[tuple[bool, list[Step]]]:
    """Each counted run of `case_id`: whether it passed and its steps (the END step last)."""
    groups, table = _instances(run, counting_mode(count_errors_as), {case_id})
    return [(inst.passed, [table.steps[n] for n in inst.steps]) for inst in groups.get(case_id, [])]


def path_counts(
    run: Run, by_variant: bool = False, count_errors_as: str = "failed"
) -> dict[tuple[str, ...], tuple[int, float]]:
    """(distinct trajectories, share of runs on the most common one) per case (per case
    and variant with `by_variant`): the `paths` and `main_path_share` of `Run.stability()`."""
    groups, _ = _instances(run, counting_mode(count_errors_as))
    out: dict[tuple[str, ...], tuple[int, float]] = {}
    for cid, insts in groups.items():
        split: dict[tuple[str, ...], dict[Trajectory, int]] = {}
        for inst in insts:
            key: tuple[str, ...] = (cid, inst.key[1]) if by_variant else (cid,)
            counts = split.setdefault(key, {})
            counts[inst.steps] = counts.get(inst.steps, 0) + 1
        for key, counts in split.items():
            out[key] = (len(counts), max(counts.values()) / sum(counts.values()))
    return out


# --- words -------------------------------------------------------------------------------


def p_text(p: float) -> str:
    """A p-value as a sentence writes it: `p = 0.004`, `p < 0.001`, `p = 1`."""
    if math.isnan(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def _shows(node: Node) -> bool:
    step = node.step
    forked = node.parent is not None and node.parent.is_fork
    if step.key() == END.key():
        return forked
    return forked or bool(step.calls or step.reached or step.outcome)


def step_words(node: Node) -> str:
    """What a branch did at its fork turn, in words (what the user said on the user's side;
    the checks when they are what differs)."""
    fork = node.parent
    if fork is None:
        return ""
    if _side(fork) == "user":
        return describe(node.step, user=node.step.key() != END.key())
    plain = {describe(c.step) for c in fork.children}
    return describe(node.step, checks=len(plain) < len(fork.children))


def path_words(node: Node) -> str:
    """`turn 2: lookup_policy(amount) → turn 3: create_expense`: the way through `node` to
    its most common end, turns counted from 1, only the turns that did something (and the
    forks)."""
    parts = []
    for n in node.line():
        if _shows(n):
            forked = n.parent is not None and n.parent.is_fork
            parts.append(f"turn {n.turn + 1}: {step_words(n) if forked else describe(n.step)}")
    return " → ".join(parts) or "no tool calls"


def frame_rows(tree: CaseTree) -> list[tuple[Any, ...]]:
    """The case's rows of `run.divergence()` (one when the runs took one path)."""
    if not tree.branches:
        main = tree.main
        rate = 100 * tree.passed / tree.runs if tree.runs else math.nan
        return [
            (
                tree.case_id,
                0,
                None,
                None,
                "",
                "",
                tree.runs,
                tree.passed,
                rate,
                True,
                path_words(main),
                math.nan,
                math.nan,
            )
        ]
    rows = []
    for b in tree.branches:
        n = b.node
        rows.append(
            (
                tree.case_id,
                b.number,
                b.parent,
                n.turn,
                b.side,
                step_words(n),
                n.runs,
                n.passed,
                100 * _rate(n),
                tree.on_main(n),
                path_words(n),
                tree.p_values[b.test],
                tree.p_holm[b.test],
            )
        )
    return rows


def divergence_frame(
    run: Run, case_id: str | None = None, count_errors_as: str = "failed"
) -> pd.DataFrame:
    """`run.divergence()`: one row per case and branch (DIVERGENCE_COLUMNS)."""
    import pandas as pd

    trees = case_trees(run, case_id, count_errors_as)
    rows = [row for tree in trees.values() for row in frame_rows(tree)]
    df = pd.DataFrame.from_records(rows, columns=list(DIVERGENCE_COLUMNS))
    return df.astype({"parent": "Int64", "fork_turn": "Int64"})


def known_case(run: Run, case_id: str) -> None:
    """Raise UnknownNameError when neither the suite nor the results have `case_id`."""
    ids = suite_order(run) or list(dict.fromkeys(r.case_id for r in run.results))
    if case_id not in ids:
        close = difflib.get_close_matches(case_id, ids, n=3)
        raise UnknownNameError("case", case_id, close, ids)


def run_divergence(
    run: Run, case_id: str | None = None, count_errors_as: str = "failed"
) -> pd.DataFrame:
    """`run.divergence()`: the frame, as a `Divergence` (in a notebook: the branches and,
    for one case, a passing and a failing run side by side)."""
    from convlab.analysis._divergence import Divergence

    if case_id is not None:
        known_case(run, case_id)
    return Divergence.of(divergence_frame(run, case_id, count_errors_as), run, case_id)


def contrasting_pair(tree: CaseTree) -> tuple[Instance, Instance, int | None] | None:
    """A passing and a failing run to read side by side, and the 0-based turn where their
    ways part (None when every run took one path): one from each side of the deciding fork,
    the passing one from its best branch; None unless the case is flaky."""
    if not tree.flaky:
        return None
    anyhow = (
        next(i for i in tree.instances if i.passed),
        next(i for i in tree.instances if not i.passed),
        None,
    )
    branch = tree.deciding()
    if branch is None or branch.node.parent is None:
        return anyhow
    kids = sorted(branch.node.parent.children, key=lambda k: -_rate(k))
    ok_node = next((k for k in kids if k.passed), kids[0])
    others = [m for k in kids if k is not ok_node for m in k.members]
    ok = [tree.instances[m] for m in ok_node.members if tree.instances[m].passed]
    bad = [tree.instances[m] for m in others if not tree.instances[m].passed]
    if not ok or not bad:  # this fork does not split passes from failures: any two then
        return anyhow
    return ok[0], bad[0], ok_node.turn
