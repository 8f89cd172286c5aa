"""`exp.divergence(case_id)`: where each variant's runs of a case leave the baseline's main path.

The baseline variant's main path (its case's most common trajectory,
convlab.analysis.divergence) is the reference. Every counted run of the case, in every
variant (the baseline too), is followed turn by turn along that path; the first turn where it
takes another step is where it *leaves* it. One row per variant and way: the runs that stay on
the main path (`leaves_at` NA), then each turn and step where runs leave it, most runs first,
with their runs, passes and pass rate and their share of the variant's runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convlab.analysis.divergence import case_instances, case_trees, path_words
from convlab.analysis.trajectory import END, Step, describe
from convlab.model.experiment import VARIANT_COLUMN

if TYPE_CHECKING:
    import pandas as pd

    from convlab.model.experiment import Experiment

__all__ = ["EXPERIMENT_DIVERGENCE_COLUMNS", "experiment_divergence"]

EXPERIMENT_DIVERGENCE_COLUMNS = (
    VARIANT_COLUMN,
    "case_id",
    "leaves_at",
    "side",
    "step",
    "runs",
    "passed",
    "pass_rate",
    "share",
)
"""`leaves_at`: the 0-based turn where the runs leave the baseline's main path (NA: they
follow it to the end); `side`: `user` or `agent` (what differs there); `step`: what they did
there instead; `pass_rate` and `share` (of the variant's runs of the case) in percent."""


def _leaving(steps: list[Step], main: list[tuple[Any, ...]]) -> tuple[int, Step] | None:
    """The first turn where `steps` leave `main` and the step taken there (None: never)."""
    for turn, step in enumerate(steps):
        if turn >= len(main) or step.key() != main[turn]:
            return turn, step
    return None


def _words(turn: int, step: Step, main: list[Step]) -> tuple[str, str]:
    """(side, step in words) of a run that leaves `main` at `turn` by taking `step`."""
    there = main[turn] if turn < len(main) else END
    side = "user" if step.user != there.user else "agent"
    if side == "user":
        return side, describe(step, user=step.key() != END.key())
    plain = describe(step) == describe(there)
    return side, describe(step, checks=plain)


def experiment_divergence(exp: Experiment, case_id: str) -> pd.DataFrame:
    """One row per variant and way its runs of `case_id` leave the baseline's main path
    (EXPERIMENT_DIVERGENCE_COLUMNS); `attrs["main_path"]` is that path in words."""
    import pandas as pd

    from convlab.analysis.divergence import known_case

    base = exp[exp.baseline]
    known_case(base, case_id)
    tree = case_trees(base, case_id).get(case_id)
    main_nodes = tree.main_line() if tree is not None else []
    main = [n.step for n in main_nodes]
    keys = [s.key() for s in main]
    rows = []
    for name, run in exp.runs.items():
        ways: dict[tuple[int | None, str, str], list[int]] = {}
        insts = case_instances(run, case_id)
        for passed, steps in insts:
            left = _leaving(steps, keys)
            way = (None, "", "") if left is None else (left[0], *_words(*left, main))
            counts = ways.setdefault(way, [0, 0])
            counts[0] += 1
            counts[1] += passed
        total = len(insts)
        ordered = sorted(ways.items(), key=lambda kv: (kv[0][0] is not None, -kv[1][0]))
        for (turn, side, step), (n, ok) in ordered:
            rows.append((name, case_id, turn, side, step, n, ok, 100 * ok / n, 100 * n / total))
    df = pd.DataFrame.from_records(rows, columns=list(EXPERIMENT_DIVERGENCE_COLUMNS))
    df = df.astype({"leaves_at": "Int64"})
    df.attrs["baseline"] = exp.baseline
    df.attrs["main_path"] = path_words(main_nodes[-1]) if main_nodes else ""
    return df
