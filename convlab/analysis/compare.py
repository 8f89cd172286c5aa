"""Run-to-run comparison: which cases changed, and whether the change is beyond noise.

A change is "beyond noise" when Fisher's exact test (two-sided) on the passes and non-passes
of the two runs gives p < alpha. With one run per case a single flip is never beyond noise
(p = 1): repeat the cases (`runs=N`) to tell a regression from chance.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from convlab._readable import pct, visible
from convlab.analysis.io import register_saver, write_atomic
from convlab.analysis.stats import Tally, counting_mode, fisher_exact, stability_word, tally
from convlab.model import faces

if TYPE_CHECKING:
    from convlab.model.run import Run

__all__ = ["COMPARE_COLUMNS", "Comparison", "compare", "comparison_json"]

COMPARE_COLUMNS = (
    "case_id",
    "presence",
    "change",
    "beyond_noise",
    "p_value",
    "pass_rate_before",
    "pass_rate_after",
    "delta_pp",
    "class_before",
    "class_after",
    "runs_before",
    "passed_before",
    "runs_after",
    "passed_after",
    "status_before",
    "status_after",
    "flips",
)
_LIST_CAP = 10


class Comparison(pd.DataFrame):
    """The per-case change table; `.summary` (also `attrs["summary"]`) says it in words, and
    `.agent_changes` what changed in the agent (its settings, a system prompt word by word).

    `class_before` / `class_after` are each side's `stability` (`stable`, `always fails`, a
    flaky case's class by its pass rate, `one run`; convlab.analysis._classes).

    Printing it shows the paragraph above the table. Derived frames (filters, sorts) are plain
    DataFrames that keep the paragraph in `attrs`.
    """

    @property
    def summary(self) -> str:
        """One paragraph: what got worse or better beyond noise, and what is in one run only."""
        return str(self.attrs.get("summary", ""))

    @property
    def agent_changes(self) -> pd.DataFrame:
        """The agent settings that differ between the two runs (`setting`, `before`, `after`;
        nested ones dotted: `params.temperature`); empty when nothing differs or when the
        comparison was made from frames."""
        from convlab.analysis.agent_diff import CHANGE_COLUMNS

        rows = self.attrs.get("agent_changes") or []
        return pd.DataFrame.from_records(rows, columns=list(CHANGE_COLUMNS))

    def __repr__(self) -> str:
        return visible(f"{self.summary}\n\n{super().__repr__()}")

    def plot(self) -> Any:  # type: ignore[override]  # the change chart, not pandas' accessor
        """Before vs after pass rate per case, changes beyond noise marked (a Plotly figure).

        It replaces pandas' `.plot` accessor on this frame: `pd.DataFrame(cmp).plot` has it.
        """
        return faces.comparison_figure(self)

    def table(self) -> Any:
        """The change table as an interactive table (sortable, searchable, offline)."""
        return faces.comparison_table(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return faces.comparison_bundle(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the comparison: `.json` (the summary, alpha, the agent's changes and one
        object per case) or `.md` (the summary and the table); the suffix picks the format."""
        from convlab.analysis.io import save

        return save(self, path, "comparison")


def comparison_json(cmp: Comparison) -> str:
    """The `.json` text of a comparison: its attrs and its rows (NaN as null)."""
    rows = json.loads(pd.DataFrame(cmp).to_json(orient="records", default_handler=str))
    head = {k: cmp.attrs.get(k) for k in ("summary", "alpha", "count_errors_as")}
    body = {
        "type": "convlab.comparison",
        **head,
        "agent_changes": cmp.attrs.get("agent_changes") or [],
    }
    return json.dumps({**body, "cases": rows}, ensure_ascii=False, indent=2, default=str) + "\n"


@register_saver(".json", what="comparison")
def _save_json(cmp: Comparison, path: Path) -> None:
    write_atomic(path, comparison_json(cmp))


def _frame(run: Run | pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The instance frame of a Run (or a frame given as is) and its suite's case order."""
    if isinstance(run, pd.DataFrame):
        return run, []
    order = [c.id for c in run.suite.cases] if run.suite is not None else []
    return run.df, order


def _statuses(df: pd.DataFrame) -> dict[str, dict[tuple[Any, ...], str]]:
    """Per case: instance key (variant, repetition, run) -> status."""
    keys = [c for c in ("variant", "repetition", "run") if c in df.columns]
    out: dict[str, dict[tuple[Any, ...], str]] = {}
    for row in df[["case_id", *keys, "status"]].itertuples(index=False, name=None):
        out.setdefault(str(row[0]), {})[tuple(row[1:-1])] = str(row[-1])
    return out


def _compact(statuses: dict[tuple[Any, ...], str] | None) -> str:
    """'passed' for one instance, else '3 passed, 2 failed'."""
    if not statuses:
        return ""
    counts = Counter(statuses.values())
    if len(statuses) == 1:
        return next(iter(counts))
    return ", ".join(f"{n} {s}" for s, n in counts.items())


def _side(t: Tally | None, mode: Any) -> tuple[int, int, float, str | None]:
    """Runs, passes, pass rate and `stability` (the class the views show) of one side."""
    if t is None:
        return (0, 0, math.nan, None)
    n = t.runs(mode)
    rate = 100 * t.passed / n if n else math.nan
    return (n, t.passed, rate, stability_word(n, t.passed) or None)


def _change(presence: str, delta: float) -> str:
    if presence != "both":
        return presence
    if math.isnan(delta) or delta == 0:
        return "same"
    return "better" if delta > 0 else "worse"


def _row(
    cid: str,
    tb: Tally | None,
    ta: Tally | None,
    sb: dict[tuple[Any, ...], str] | None,
    sa: dict[tuple[Any, ...], str] | None,
    mode: Any,
    alpha: float,
) -> dict[str, Any]:
    nb, cb, rb, kb = _side(tb, mode)
    na, ca, ra, ka = _side(ta, mode)
    presence = "both" if tb and ta else ("before_only" if tb else "after_only")
    p = fisher_exact(cb, nb - cb, ca, na - ca) if nb and na else math.nan
    flips = sum(sb[k] != sa[k] for k in sb.keys() & sa.keys()) if sb and sa else 0
    delta = ra - rb
    return {
        "case_id": cid,
        "presence": presence,
        "change": _change(presence, delta),
        "beyond_noise": bool(p < alpha),
        "p_value": p,
        "pass_rate_before": rb,
        "pass_rate_after": ra,
        "delta_pp": delta,
        "class_before": kb,
        "class_after": ka,
        "runs_before": nb,
        "passed_before": cb,
        "runs_after": na,
        "passed_after": ca,
        "status_before": _compact(sb),
        "status_after": _compact(sa),
        "flips": flips,
    }


def compare(
    before: Run | pd.DataFrame,
    after: Run | pd.DataFrame,
    alpha: float = 0.05,
    count_errors_as: str = "failed",
) -> Comparison:
    """Per-case changes from `before` to `after` (Runs, or frames shaped like `Run.df`).

    One row per case in either run (cases in only one run are listed with `presence`
    `before_only` / `after_only`, never dropped): pass rates and classes on both sides, the
    change in percentage points, status flips between matching instances, Fisher's exact
    p-value and `beyond_noise` (p < alpha). Errors count as failed unless
    `count_errors_as="excluded"`; skipped, blocked and cancelled never count.
    """
    mode = counting_mode(count_errors_as)
    df_b, order_b = _frame(before)
    df_a, order_a = _frame(after)
    tb = {k[0]: t for k, t in tally(df_b, order=order_b).items()}
    ta = {k[0]: t for k, t in tally(df_a, order=order_a).items()}
    sb, sa = _statuses(df_b), _statuses(df_a)
    ids = list(ta) + [cid for cid in tb if cid not in ta]
    rows = [_row(c, tb.get(c), ta.get(c), sb.get(c), sa.get(c), mode, alpha) for c in ids]
    out = Comparison(pd.DataFrame.from_records(rows, columns=list(COMPARE_COLUMNS)))
    changes = _agent_changes(before, after)
    summary = _paragraph(out, alpha, mode) + _changes_sentence(changes)
    out.attrs.update(
        {"alpha": alpha, "count_errors_as": mode, "summary": summary, "agent_changes": changes}
    )
    return out


def _agent_changes(before: Run | pd.DataFrame, after: Run | pd.DataFrame) -> list[dict[str, Any]]:
    """The agent settings that differ between two Runs (none for frames)."""
    if isinstance(before, pd.DataFrame) or isinstance(after, pd.DataFrame):
        return []
    from convlab.analysis.agent_diff import settings_diff

    return settings_diff(before.agent_settings, after.agent_settings)


def _changes_sentence(changes: list[dict[str, Any]]) -> str:
    if not changes:
        return ""
    from convlab.analysis.agent_diff import change_text

    return " The agent changed: " + "; ".join(change_text(c) for c in changes) + "."


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:_LIST_CAP])
    more = len(items) - _LIST_CAP
    return shown + (f" and {more} more" if more > 0 else "")


def _moved(df: pd.DataFrame, with_p: bool) -> list[str]:
    out = []
    for r in df.to_dict("records"):
        move = f"{pct(r['pass_rate_before'])} → {pct(r['pass_rate_after'])}"
        out.append(f"{r['case_id']} ({move}" + (f", p={r['p_value']:.2g})" if with_p else ")"))
    return out


def _plural(n: int, word: str = "case") -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _paragraph(df: pd.DataFrame, alpha: float, mode: str) -> str:
    """The comparison in words, e.g. '1 case got worse beyond noise: b (100% → 0%, p=1.1e-05).'"""
    both = df[df["presence"] == "both"]
    errors = "errors counted as failed" if mode == "failed" else "errors left out"
    parts = [
        f"Compared {_plural(len(df))} ({len(both)} in both runs; Fisher's exact test, "
        f"two-sided, alpha {alpha:g}; {errors}; skipped, blocked and cancelled not counted)."
    ]
    for word in ("worse", "better"):
        hit = both[(both["change"] == word) & both["beyond_noise"]]
        if len(hit):
            what = _names(_moved(hit, with_p=True))
            parts.append(f"{_plural(len(hit))} got {word} beyond noise: {what}.")
        else:
            parts.append(f"No case got {word} beyond noise.")
    within = both[both["change"].isin(["worse", "better"]) & ~both["beyond_noise"]]
    if len(within):
        parts.append(
            f"{_plural(len(within))} changed within noise: {_names(_moved(within, False))}."
        )
    flipped = both[(both["change"] == "same") & (both["flips"] > 0)]
    if len(flipped):
        parts.append(
            f"{_plural(len(flipped))} changed status without changing pass rate: "
            f"{_names([str(c) for c in flipped['case_id']])}."
        )
    for presence, label in (("before_only", "before"), ("after_only", "after")):
        only = [str(c) for c in df.loc[df["presence"] == presence, "case_id"]]
        if only:
            parts.append(f"Only in the {label} run: {_names(only)}.")
    return " ".join(parts)
