"""Statistics against hand-computed values: classes, pass^k/pass@k, Wilson, Fisher, compare."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convlab as cl
from convlab.analysis.stats import (
    classify,
    fisher_exact,
    pass_at_k,
    pass_hat_k,
    pass_k_table,
    stability,
    summary,
    wilson,
)
from convlab.model.records import CaseResult
from convlab.model.run import Run


def frame(**cases: list[str] | list[tuple[str, float]]) -> pd.DataFrame:
    """Instance rows: case id -> statuses (or (status, duration_ms) pairs), one row per run."""
    rows = []
    for cid, runs in cases.items():
        for i, item in enumerate(runs):
            status, dur = item if isinstance(item, tuple) else (item, 10.0)
            rows.append(
                {
                    "case_id": cid,
                    "variant": "",
                    "repetition": 0,
                    "run": i,
                    "status": status,
                    "duration_ms": dur,
                }
            )
    return pd.DataFrame(rows)


def make_run(statuses: dict[str, list[str]]) -> Run:
    return Run(
        results=[
            CaseResult(case_id=cid, status=s, run=i)  # type: ignore[arg-type]
            for cid, ss in statuses.items()
            for i, s in enumerate(ss)
        ]
    )


@pytest.mark.parametrize(
    ("rate", "cls"),
    [
        (100, "stable"),
        (99.99, "mostly_stable"),
        (80, "mostly_stable"),
        (79.99, "unstable"),
        (50, "unstable"),
        (49.99, "highly_unstable"),
        (0, "highly_unstable"),
        (math.nan, None),
    ],
)
def test_class_boundaries_are_inclusive(rate, cls):
    assert classify(rate) == cls


# n = 5 runs, c = 0..5 passes, k = 2, by hand: C(c,2)/C(5,2) and 1 - C(5-c,2)/C(5,2)
PASS_HAT_2 = [0.0, 0.0, 0.1, 0.3, 0.6, 1.0]
PASS_AT_2 = [0.0, 0.4, 0.7, 0.9, 1.0, 1.0]


@pytest.mark.parametrize("c", range(6))
def test_pass_hat_k_and_pass_at_k_for_five_runs(c):
    assert pass_hat_k(5, c, 2) == pytest.approx(PASS_HAT_2[c])
    assert pass_at_k(5, c, 2) == pytest.approx(PASS_AT_2[c])
    assert pass_hat_k(5, c, 1) == pytest.approx(c / 5) == pytest.approx(pass_at_k(5, c, 1))
    assert pass_hat_k(5, c, 5) == (1.0 if c == 5 else 0.0)
    assert pass_at_k(5, c, 5) == (1.0 if c > 0 else 0.0)


def test_pass_k_needs_enough_runs_and_a_positive_k():
    assert math.isnan(pass_hat_k(3, 3, 4)) and math.isnan(pass_at_k(3, 1, 4))
    with pytest.raises(ValueError, match="k must be at least 1"):
        pass_hat_k(5, 3, 0)
    with pytest.raises(ValueError, match="between 0 and runs"):
        pass_at_k(5, 6, 1)


def test_wilson_interval_for_four_of_five():
    low, high = wilson(4, 5)
    assert (round(100 * low, 1), round(100 * high, 1)) == (37.6, 96.4)
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0
    assert all(math.isnan(x) for x in wilson(0, 0))


@pytest.mark.parametrize(
    ("table", "p"),
    [
        ((3, 1, 1, 3), 17 / 35),  # Fisher's tea tasting
        ((1, 9, 11, 3), 0.0027594561852),  # Wikipedia's dieting example, two-tailed
        ((10, 0, 0, 10), 2 / 184756),
        ((1, 0, 0, 1), 1.0),
        ((5, 0, 5, 0), 1.0),
    ],
)
def test_fisher_exact_two_sided(table, p):
    assert fisher_exact(*table) == pytest.approx(p, rel=1e-9)


def test_stability_contract_columns_and_values():
    df = frame(a=["passed"] * 4 + ["failed"], b=["passed"] * 5, c=["failed", "passed"])
    st = stability(df).set_index("case_id")
    contract = {
        "runs",
        "passed",
        "failed",
        "errors",
        "pass_rate",
        "classification",
        "pass_hat_k",
        "ci_low",
        "ci_high",
        "duration_mean_ms",
        "duration_min_ms",
        "duration_max_ms",
        "duration_std_ms",
    }
    assert contract <= set(st.columns)
    a = st.loc["a"]
    assert (a["runs"], a["passed"], a["failed"], a["pass_rate"]) == (5, 4, 1, 80.0)
    assert a["classification"] == "mostly_stable" and bool(a["flaky"])
    assert a["k"] == 5 and a["pass_hat_k"] == 0.0 and a["pass_at_k"] == 1.0
    assert (round(a["ci_low"], 1), round(a["ci_high"], 1)) == (37.6, 96.4)
    assert st.loc["b", "classification"] == "stable" and st.loc["b", "pass_hat_k"] == 1.0
    assert not st.loc["b", "flaky"]
    assert st.loc["c", "classification"] == "unstable"


def test_stability_k_given():
    st = stability(frame(a=["passed"] * 3 + ["failed"] * 2), k=2).iloc[0]
    assert (st["k"], st["pass_hat_k"], st["pass_at_k"]) == (
        2,
        pytest.approx(0.3),
        pytest.approx(0.9),
    )
    assert math.isnan(stability(frame(a=["passed"]), k=2).iloc[0]["pass_hat_k"])


def test_durations_use_population_std():
    st = stability(
        frame(a=[("passed", 10.0), ("passed", 20.0), ("failed", 30.0), ("passed", 40.0)])
    ).iloc[0]
    assert (st["duration_mean_ms"], st["duration_min_ms"], st["duration_max_ms"]) == (25, 10, 40)
    assert st["duration_std_ms"] == pytest.approx(math.sqrt(125))  # divide by N, not N-1


def test_errors_are_never_passes_and_the_setting_is_in_the_output():
    df = frame(a=["passed", "error", "error"], b=["error", "error"])
    failed = stability(df).set_index("case_id")
    assert (failed.loc["a", "runs"], failed.loc["a", "passed"]) == (3, 1)
    assert failed.loc["a", "pass_rate"] == pytest.approx(100 / 3)
    assert failed.loc["b", "pass_rate"] == 0 and failed.loc["b", "errors"] == 2
    assert set(failed["errors_counted_as"]) == {"failed"}
    excluded = stability(df, count_errors_as="excluded").set_index("case_id")
    assert (excluded.loc["a", "runs"], excluded.loc["a", "pass_rate"]) == (1, 100.0)
    assert excluded.loc["b", "runs"] == 0 and excluded.loc["b", "passed"] == 0
    assert math.isnan(excluded.loc["b", "pass_rate"]) and pd.isna(
        excluded.loc["b", "classification"]
    )
    assert set(excluded["errors_counted_as"]) == {"excluded"}
    assert "errors are left out" in excluded.attrs["note"]
    with pytest.raises(ValueError, match="'failed' or 'excluded'"):
        stability(df, count_errors_as="passed")


def test_skipped_blocked_cancelled_are_never_counted_and_timeouts_fail():
    df = frame(
        a=["passed", "skipped", "blocked", "cancelled"], b=["skipped"], c=["passed", "timeout"]
    )
    st = stability(df).set_index("case_id")
    assert (st.loc["a", "runs"], st.loc["a", "pass_rate"]) == (1, 100.0)
    assert (st.loc["a", "skipped"], st.loc["a", "cancelled"]) == (2, 1)
    assert st.loc["b", "runs"] == 0 and math.isnan(st.loc["b", "pass_rate"])
    assert (st.loc["c", "runs"], st.loc["c", "timeouts"], st.loc["c", "pass_rate"]) == (2, 1, 50.0)


def test_rows_follow_the_given_case_order_then_first_seen():
    df = frame(z=["passed"], x=["passed"], y=["passed"])
    assert list(stability(df, order=["y", "z"])["case_id"]) == ["y", "z", "x"]


def test_stability_by_variant():
    df = frame(a=["passed", "failed"])
    df["variant"] = ["s=v1", "s=v2"]
    st = stability(df, by_variant=True)
    assert list(zip(st["variant"], st["pass_rate"], strict=True)) == [
        ("s=v1", 100.0),
        ("s=v2", 0.0),
    ]


def test_summary_overall_rate_is_the_mean_of_case_rates():
    df = frame(a=["passed"] * 4, b=["passed", "failed", "error", "timeout"], s=["skipped"])
    s = summary(df, stability(df))
    assert (s["total"], s["passed"], s["failed"], s["errors"], s["timeouts"], s["skipped"]) == (
        9,
        5,
        1,
        1,
        1,
        1,
    )
    assert s["pass_rate"] == pytest.approx((100 + 25) / 2)  # not 5/8 of instances
    assert (s["stable_cases"], s["unstable_cases"], s["flaky_cases"]) == (1, 1, 1)
    assert s["count_errors_as"] == "failed"


def test_pass_k_table_over_several_k():
    table = pass_k_table(frame(a=["passed"] * 3 + ["failed"] * 2, b=["passed"]), ks=range(1, 6))
    a = table[table["case_id"] == "a"].set_index("k")
    assert list(a.index) == [1, 2, 3, 4, 5]
    # by default the k grid is thinkingbox's {1, 5, 10, 20, 50, 100}, k <= the most runs
    assert list(pass_k_table(frame(a=["passed"] * 12))["k"]) == [1, 5, 10]
    assert a.loc[2, "pass_hat_k"] == pytest.approx(0.3) and a.loc[2, "pass_at_k"] == pytest.approx(
        0.9
    )
    b = table[table["case_id"] == "b"].set_index("k")
    assert b.loc[1, "pass_hat_k"] == 1.0 and math.isnan(b.loc[2, "pass_hat_k"])
    assert list(pass_k_table(frame(a=["passed"] * 3), ks=[1, 3])["k"]) == [1, 3]


def test_compare_same_deterministic_agent_shows_no_change():
    statuses = {"a": ["passed"] * 5, "b": ["failed"] * 5, "c": ["passed", "failed"] * 2}
    cmp = cl.compare(make_run(statuses), make_run(statuses))
    assert not cmp["beyond_noise"].any()
    assert set(cmp["change"]) == {"same"} and (cmp["flips"] == 0).all()
    assert "No case got worse beyond noise. No case got better beyond noise." in cmp.summary


def test_compare_flags_exactly_the_case_that_broke():
    before = make_run(
        {"a": ["passed"] * 10, "b": ["passed"] * 10, "c": ["passed"] * 5 + ["failed"] * 5}
    )
    after = make_run(
        {"a": ["passed"] * 10, "b": ["failed"] * 10, "c": ["passed"] * 4 + ["failed"] * 6}
    )
    cmp = cl.compare(before, after)
    assert list(cmp.loc[cmp["beyond_noise"], "case_id"]) == ["b"]
    b = cmp.set_index("case_id").loc["b"]
    assert (b["change"], b["pass_rate_before"], b["pass_rate_after"], b["delta_pp"]) == (
        "worse",
        100.0,
        0.0,
        -100.0,
    )
    assert (b["class_before"], b["class_after"], b["flips"]) == ("stable", "always fails", 10)
    assert b["p_value"] == pytest.approx(2 / 184756)
    assert "1 case got worse beyond noise: b (100.0% → 0.0%, p=1.1e-05)." in cmp.summary
    assert "1 case changed within noise: c (50.0% → 40.0%)." in cmp.summary
    assert cmp.attrs["summary"] == cmp.summary
    assert cmp.summary in repr(cmp) and cmp.summary in str(cmp)


def test_compare_lists_cases_in_one_run_only():
    cmp = cl.compare(
        make_run({"a": ["passed"], "gone": ["passed"]}),
        make_run({"a": ["failed"], "new": ["passed"]}),
    )
    by = cmp.set_index("case_id")
    assert list(cmp["case_id"]) == ["a", "new", "gone"]
    assert (by.loc["gone", "presence"], by.loc["new", "presence"]) == ("before_only", "after_only")
    assert by.loc["a", "change"] == "worse" and not by.loc["a", "beyond_noise"]  # one run: p = 1
    assert by.loc["a", "status_before"] == "passed" and by.loc["a", "status_after"] == "failed"
    assert "Only in the before run: gone." in cmp.summary
    assert "Only in the after run: new." in cmp.summary


def test_compare_status_flip_without_rate_change_and_better_beyond_noise():
    cmp = cl.compare(
        make_run({"a": ["failed"], "b": ["failed"] * 8}),
        make_run({"a": ["error"], "b": ["passed"] * 8}),
    ).set_index("case_id")
    assert cmp.loc["a", "change"] == "same" and cmp.loc["a", "flips"] == 1
    assert cmp.loc["b", "change"] == "better" and cmp.loc["b", "beyond_noise"]


def test_compare_html_escapes_case_ids():
    cmp = cl.compare(make_run({"<b>x</b>": ["passed"]}), make_run({"y": ["passed"]}))
    page = cmp._repr_html_()
    assert "<b>x</b>" not in page.split("</p>")[0] and "&lt;b&gt;x&lt;/b&gt;" in page


def test_compare_accepts_frames():
    cmp = cl.compare(frame(a=["passed"] * 6), frame(a=["failed"] * 6))
    assert bool(cmp["beyond_noise"].iloc[0])


@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
@settings(max_examples=200, deadline=None)
def test_pass_k_bounds(nck):
    n, c, k = nck
    assert 0 <= pass_hat_k(n, c, k) <= c / n + 1e-12 <= pass_at_k(n, c, k) + 2e-12 <= 1 + 3e-12
    low, high = wilson(c, n)
    assert 0 <= low <= c / n <= high <= 1


@given(st.tuples(*[st.integers(0, 15)] * 4))
@settings(max_examples=200, deadline=None)
def test_fisher_is_a_probability_and_symmetric(t):
    a, b, c, d = t
    p = fisher_exact(a, b, c, d)
    assert 0 < p <= 1
    assert p == pytest.approx(fisher_exact(c, d, a, b)) == pytest.approx(fisher_exact(a, c, b, d))


def test_the_summary_of_a_big_run_is_the_same_read_streaming_or_from_its_latest_rows():
    """`rollup` reads the results once without keeping their rows; the figures are those
    of the latest rows (`instance_rows`), and an instance recorded twice counts once, as its
    latest record."""
    from pathlib import Path

    import msgspec

    from convlab.analysis.frames import instance_rows
    from convlab.analysis.rollup import _rollup, rollup

    expense = Path(__file__).resolve().parent.parent / "examples" / "expense"
    run = cl.run(expense, "demo:expense", runs=3, progress=False, history=False)
    streamed = rollup(run)
    held = _rollup(run, instance_rows(run), "failed")
    assert streamed.summary == held.summary and dict(streamed.cases) == dict(held.cases)
    assert streamed.reasons == held.reasons
    passed = next(r for r in run.results if r.status == "passed")
    again = msgspec.structs.replace(passed, status="failed")
    twice = msgspec.structs.replace(run, results=[*run.results, again])
    s = twice.summary
    assert s["total"] == len(run.results) == 36
    assert (s["passed"], s["failed"]) == (run.summary["passed"] - 1, run.summary["failed"] + 1)
