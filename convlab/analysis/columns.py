"""The columns of the summary frames, declared once: each with its title and how its value
reads. The views derive what they show from here (the notebook and HTML tables every
column in order, under its title; the console and the Markdown report the `brief` ones, each
value in its format), so renaming, retitling or showing a new column is one edit here.

A column is a frame column (`parts` empty: the frame has it under `name`), or a view-only
cell made of frame columns (`parts`: `95% CI` shows `ci_low`-`ci_high`). A column added to
a declaration with `derive` gets its value from the row's other columns wherever the frame
is built.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from convlab._readable import MISSING, cost, count, is_missing, millis, number, pct, tokens
from convlab.analysis.stats import STABILITY
from convlab.model.experiment import VARIANT_COLUMN

__all__ = ["FORMATS", "LEADERBOARD", "Column", "Columns", "Format"]

Format = Callable[..., str]
"""A column's values (its `parts`, or its own value) as the text a view shows."""


def _tokens(value: Any) -> str:
    """A token count; no tokens reported reads as `-` (a model that reports none)."""
    return tokens(value) if value else MISSING


def _p(value: Any) -> str:
    return "" if is_missing(value) else number(value, ".3g")


def _pp(value: Any) -> str:
    return "" if is_missing(value) else number(value, "+.1f") + " pp"


def _flag(value: Any) -> str:
    return "" if is_missing(value) else ("yes" if value else "no")


def _text(value: Any) -> str:
    return "" if is_missing(value) else str(value)


def _interval(low: Any, high: Any) -> str:
    return f"{pct(low)}-{pct(high)}"


def _of(part: Any, whole: Any) -> str:
    return f"{count(part)}/{count(whole)}"


def _variant(name: Any, baseline: Any) -> str:
    return f"{name} (baseline)" if baseline is True else str(name)


FORMATS: dict[str, Format] = {
    "text": _text,
    "pct": pct,
    "count": count,
    "tokens": _tokens,
    "usd": cost,
    "ms": millis,
    "p": _p,
    "pp": _pp,
    "flag": _flag,
    "interval": _interval,
    "of": _of,
    "variant": _variant,
}
"""Format names -> the function that writes such a value: the one formatter's
(`convlab._readable`: `pct` 66.7%, `usd`, `ms`, ...) or a cell made of them."""

NUMERIC = frozenset({"pct", "count", "tokens", "usd", "ms", "p", "pp", "interval", "of"})
"""Formats whose text a table aligns right."""


@dataclass(frozen=True)
class Column:
    """One column of a summary frame (see the module docstring)."""

    name: str
    title: str
    format: str = "text"
    brief: bool = False
    """Shown by the short views (the console, the Markdown report)."""
    table: bool = True
    """Shown by the notebook and HTML tables (a frame column only)."""
    parts: tuple[str, ...] = ()
    """The frame columns a view-only cell shows (empty: this column itself)."""
    derive: Callable[[Mapping[str, Any]], Any] | None = None
    """How the frame's builder gets this column's value from the row's others (None: it
    makes the value itself)."""

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"column {self.name!r}: unknown format {self.format!r}")

    @property
    def in_frame(self) -> bool:
        """Whether the frame has this column (a view-only cell has `parts` instead)."""
        return not self.parts

    def cell(self, row: Mapping[str, Any]) -> str:
        """This column's text in `row` (a frame row as a dict)."""
        values = [row.get(p) for p in self.parts] if self.parts else [row.get(self.name)]
        return FORMATS[self.format](*values)

    @property
    def right(self) -> bool:
        """Whether a table aligns it right (a figure)."""
        return self.format in NUMERIC


class Columns:
    """The declared columns of one frame, in the order views show them."""

    def __init__(self, frame: str, columns: list[Column]) -> None:
        self.frame = frame
        self._columns = list(columns)

    def __iter__(self) -> Iterator[Column]:
        return iter(list(self._columns))

    def names(self) -> tuple[str, ...]:
        """The frame's columns, in order."""
        return tuple(c.name for c in self._columns if c.in_frame)

    def brief(self) -> list[Column]:
        """What the short views show (the console, the Markdown report)."""
        return [c for c in self._columns if c.brief]

    def titles(self) -> dict[str, str]:
        """Frame column -> the title a table shows for it."""
        return {c.name: c.title for c in self._columns if c.in_frame and c.table}

    def shown(self) -> list[str]:
        """The frame columns a table shows, in order."""
        return [c.name for c in self._columns if c.in_frame and c.table]

    def derive(self, row: dict[str, Any]) -> dict[str, Any]:
        """`row` with the value of every column declared with `derive`."""
        for c in self._columns:
            if c.derive is not None:
                row[c.name] = c.derive(row)
        return row

    @contextlib.contextmanager
    def added(self, column: Column) -> Iterator[Column]:
        """Declare `column` (last) for a `with` block, then take it away again."""
        self._columns.append(column)
        try:
            yield column
        finally:
            self._columns.remove(column)


ROLE_TOKENS = ("agent_tokens", "simulator_tokens", "judge_tokens")
STABILITY_COLUMNS = tuple(word.replace(" ", "_") for word in STABILITY)
"""`stable`, `mostly_stable`, ..., `always_fails`, `one_run`: cases counted by `stability`."""

LEADERBOARD = Columns(
    "leaderboard",
    [
        Column(VARIANT_COLUMN, "variant"),
        Column("variant_shown", "variant", "variant", True, False, (VARIANT_COLUMN, "baseline")),
        Column("agent", "agent"),
        Column("baseline", "baseline", "flag", table=False),
        Column("pass_rate", "pass rate", "pct", brief=True),
        Column("ci_low", "95% CI low", "pct"),
        Column("ci_high", "95% CI high", "pct"),
        Column("ci", "95% CI", "interval", True, False, ("ci_low", "ci_high")),
        Column("runs", "runs", "count"),
        Column("passed", "passed", "count"),
        Column("cases", "cases", "count"),
        *(Column(name, name.replace("_", " "), "count") for name in STABILITY_COLUMNS),
        Column("stable_of", "stable", "of", True, False, ("stable", "cases")),
        Column("flaky", "flaky", "count"),
        Column("not_agent", "not the agent's", "count"),
        Column("total_tokens", "tokens", "tokens", brief=True),
        *(Column(name, name.replace("_", " "), "tokens") for name in ROLE_TOKENS),
        Column("cost_usd", "cost (USD)", "usd", brief=True),
        Column("latency_p50_ms", "latency p50", "ms", brief=True),
        Column("latency_p95_ms", "latency p95", "ms", brief=True),
        Column("delta_pp", "vs baseline", "pp"),
        # two tests against the baseline, named apart so that they never read as one:
        # per case (each case's own test) and pooled (all the variant's runs together)
        Column("cases_better", "cases better", "count", brief=True),
        Column("cases_worse", "cases worse", "count", brief=True),
        Column("pooled_p", "pooled p", "p"),
        Column("pooled_p_holm", "pooled p (Holm)", "p", brief=True),
        Column("pooled_beyond_noise", "pooled: beyond noise", "flag"),
    ],
)
"""`Experiment.leaderboard()`'s columns (convlab.analysis.leaderboard makes the values)."""
