"""Stability figures in thinkingbox's own terms, against `tb agg`'s output on the same matrix.

The expected values were produced by thinkingbox itself (microsoft/thinkingbox@dafead8a,
thinkingbox/cli/agg_main.py `aggregate_results_per_test`, `aggregate_results`, `pass_power_k`,
`pass_at_k_unbiased`; thinkingbox/common/eval_utils.py `cred_int`, `prob_in_zone`): a JSONL of
60 `DecodeResult`s, 6 tests x 10 runs, run through `tb agg -f json`. In that matrix `P` is a
test returning normally, `F` an AssertionError, `D` a decoding error (`is_system_error`) and
`E` a test that raised another exception: thinkingbox counts D and E as runs, never as passes
(`aggregate_results`: every decode is a run, a pass only when `test_result.result` is true;
common/testrunner.py `TestScript.evaluate_sync` sets it false for any exception).

Here the matrix is not built by hand: tests/data/tb_stats holds a thinkingbox dataset whose
test file runs through a real `cl.run(..., runs=10)`. The agent answers each run with that
run's letter of the test's row: the test returns on P, asserts on F and raises RuntimeError
on E, and the agent itself raises on D.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import convlab as cl
from convlab.analysis._intervals import betainc, betaincinv, jeffreys, prob_in_zone
from convlab.analysis.stats import pass_pow_k
from convlab.model.records import CaseResult
from convlab.model.run import Run
from convlab.notebook.charts import pass_rates

DATASET = Path(__file__).parent / "data" / "tb_stats" / "test_case"
MATRIX = {
    "t_all": "PPPPPPPPPP",
    "t_nine": "PPPPPPPPPF",
    "t_seven": "PPPPPPPFFD",
    "t_half": "PPPPPFFFFE",
    "t_one": "PFFFFFFFFF",
    "t_none": "FFFFFFFFFF",
    "t_raises": "PPPPPFFFEE",
}


def letter_agent(messages: list[dict[str, Any]], ctx: cl.AgentContext) -> str:
    """Answers run r of test t with MATRIX[t][r]; a D is a decoding error (it raises)."""
    test = messages[-1]["content"].strip()
    label = ctx.instance  # "<file>:<test>", then " #<run>" from the second run on
    run = int(label.rsplit("#", 1)[1]) if "#" in label else 0
    letter = MATRIX[test][run]
    if letter == "D":
        raise RuntimeError("the model call failed")
    return letter


def run_file(name: str) -> Run:
    return cl.run(DATASET / name, letter_agent, runs=10, retries=0, progress=False)


@functools.cache
def matrix_run() -> Run:
    return run_file("stats.py")


# `tb agg -f json` per_test: (success_pct, likelihood_in_goldilocks_zone, in_goldilocks_zone)
TB_PER_TEST = {
    "t_all": (1.0, 0.2499459067917681, False),
    "t_nine": (0.9, 0.7392159429974405, False),
    "t_seven": (0.7, 0.9926215166621064, True),
    "t_half": (0.5, 0.999910023172121, True),
    "t_one": (0.1, 0.7392159429974403, False),
    "t_none": (0.0, 0.2499459067917682, False),
}
# `tb agg -f json` metrics
TB_METRICS = {
    "num_tests": 6,
    "runs_per_test": 10,
    "total_runs": 60,
    "mean_pass": 0.5333333333333333,
    "mean_pass_ci_low": 0.4080250583586893,
    "mean_pass_ci_high": 0.6555109243140067,
    "unbiased_pass_at_k": [
        [1, 0.5333333333333333],
        [5, 0.7493386243386243],
        [10, 0.8333333333333334],
    ],
    "pass_power_k": [[1, 0.5333333333333333], [5, 0.2983033333333333], [10, 0.22965042126666668]],
}
# eval_utils.cred_int(c, 10) for each test's c (thinkingbox prints it only for the suite)
TB_CRED_INT = {
    "t_all": (0.7828037324907895, 0.9999521095668424),
    "t_nine": (0.6186852289333836, 0.9889883262368389),
    "t_seven": (0.39418168185132874, 0.9073054060618468),
    "t_half": (0.22352867025270523, 0.7764713297472947),
    "t_one": (0.011011673763161138, 0.3813147710666164),
    "t_none": (4.789043315758196e-05, 0.21719626750921053),
}
TOL = 1e-12


def test_per_test_goldilocks_zone_equals_tb_agg():
    stab = matrix_run().stability()
    for _, row in stab.iterrows():
        success, p_zone, in_zone = TB_PER_TEST[row["case_id"].removeprefix("stats.py:")]
        assert row["runs"] == 10
        assert row["pass_rate"] / 100 == pytest.approx(success, abs=TOL)
        assert row["p_in_zone"] == pytest.approx(p_zone, abs=TOL)
        assert bool(row["in_goldilocks_zone"]) is in_zone


def test_pass_pow_k_and_pass_at_k_on_thinkingbox_grid_equal_tb_agg():
    table = matrix_run().pass_k_table()
    assert sorted(set(table["k"])) == [1, 5, 10]  # the grid {1,5,10,20,50,100}, k <= 10 runs
    means = table.groupby("k")[["pass_pow_k", "pass_at_k"]].mean()
    for k, value in TB_METRICS["pass_power_k"]:
        assert means.loc[k, "pass_pow_k"] == pytest.approx(value, abs=TOL)
    for k, value in TB_METRICS["unbiased_pass_at_k"]:
        assert means.loc[k, "pass_at_k"] == pytest.approx(value, abs=TOL)


def test_run_summary_mean_pass_and_jeffreys_interval_equal_tb_agg():
    s = matrix_run().summary
    assert s["mean_pass"] / 100 == pytest.approx(TB_METRICS["mean_pass"], abs=TOL)
    assert s["mean_pass_ci_low"] / 100 == pytest.approx(TB_METRICS["mean_pass_ci_low"], abs=TOL)
    assert s["mean_pass_ci_high"] / 100 == pytest.approx(TB_METRICS["mean_pass_ci_high"], abs=TOL)
    assert s["passed"] == 32 and s["total"] == TB_METRICS["total_runs"]


def test_jeffreys_interval_per_case_equals_cred_int():
    stab = matrix_run().stability(interval="jeffreys")
    assert stab.attrs["interval"] == "jeffreys" and set(stab["interval"]) == {"jeffreys"}
    for _, row in stab.iterrows():
        low, high = TB_CRED_INT[row["case_id"].removeprefix("stats.py:")]
        assert row["ci_low"] / 100 == pytest.approx(low, abs=TOL)
        assert row["ci_high"] / 100 == pytest.approx(high, abs=TOL)
    wilson = matrix_run().stability()  # convlab's default stays the Wilson interval
    assert wilson.attrs["interval"] == "wilson"
    assert wilson.set_index("case_id").loc["stats.py:t_all", "ci_high"] == 100.0
    with pytest.raises(ValueError, match="interval must be 'wilson' or 'jeffreys'"):
        matrix_run().stability(interval="normal")


def test_the_matrix_ran_as_written():
    run = matrix_run()
    for case_id, row in MATRIX.items():
        if case_id == "t_raises":
            continue
        got = sorted(r.status for r in run.results if r.case_id == f"stats.py:{case_id}")
        want = sorted({"P": "passed", "F": "failed", "D": "error", "E": "error"}[c] for c in row)
        assert got == want, case_id
    crashed = [r for r in run.results if r.case_id == "stats.py:t_half" and r.status == "error"]
    assert [(r.blame, r.code) for r in crashed] == [("agent", "EVALUATOR_FAILED")]
    assert "RuntimeError: the test crashed on E" in (crashed[0].error or "")


def test_a_test_that_raises_is_a_run_that_did_not_pass():
    # The row PPPPPFFFEE: 5 passes, 3 AssertionErrors, 2 RuntimeErrors. `tb agg` (values from
    # agg_main.py `pass_power_k`, `pass_at_k_unbiased` and eval_utils.py `cred_int` on
    # n=10, c=5): runs 10, success 50%, pass^5 0.03125, pass@10 1.0, Jeffreys 22.4% to 77.6%
    run = run_file("raises.py")
    row = run.stability(interval="jeffreys").iloc[0]
    assert row["runs"] == 10 and row["pass_rate"] == pytest.approx(50.0, abs=TOL)
    assert row["ci_low"] / 100 == pytest.approx(0.22352867025270523, abs=TOL)
    assert row["ci_high"] / 100 == pytest.approx(0.7764713297472947, abs=TOL)
    table = run.pass_k_table().set_index("k")
    assert table.loc[5, "pass_pow_k"] == pytest.approx(0.03125, abs=TOL)
    assert table.loc[10, "pass_at_k"] == pytest.approx(1.0, abs=TOL)
    s = run.summary
    assert s["mean_pass"] == pytest.approx(50.0, abs=1e-9) and s["not_agent"] == 0


def test_pass_pow_k_is_biased_where_pass_hat_k_is_zero():
    # agg_main.py `pass_power_k`: (c/n)^k keeps a signal when c < k; C(c,k)/C(n,k) is 0 there
    row = matrix_run().stability(k=5).set_index("case_id").loc["stats.py:t_one"]
    assert row["pass_hat_k"] == 0.0 and row["pass_pow_k"] == pytest.approx(0.1**5)
    assert pass_pow_k(0, 0, 1) == 0.0  # no runs: 0.0, as thinkingbox returns
    assert pass_pow_k(4, 3, 10) == pytest.approx(0.75**10)  # defined for k > n too


# scipy.special values (what eval_utils calls), as computed in thinkingbox's environment
@pytest.mark.parametrize(
    ("c", "n", "zone", "interval"),
    [
        (3, 20, 0.9332815578772542, None),
        (0, 1, None, (0.0003855809807559016, 0.8532536836904248)),
        (37, 100, None, (0.2801617307208821, 0.4672420693662505)),
    ],
)
def test_beta_functions_match_scipy(c, n, zone, interval):
    if zone is not None:
        assert prob_in_zone(c, n) == pytest.approx(zone, abs=TOL)
    if interval is not None:
        low, high = jeffreys(c, n)
        assert (low, high) == pytest.approx(interval, abs=TOL)
    assert betainc(2.5, 3.5, betaincinv(2.5, 3.5, 0.3)) == pytest.approx(0.3, abs=TOL)


def test_case_without_runs_is_not_in_the_zone():
    run = Run(results=[CaseResult(case_id="s", status="skipped", run=0)])  # type: ignore[arg-type]
    row = run.stability(interval="jeffreys").iloc[0]
    assert row["runs"] == 0 and math.isnan(row["p_in_zone"]) and not row["in_goldilocks_zone"]
    assert math.isnan(row["ci_low"])
    assert run.summary["mean_pass"] is None
    assert cl.Run is Run


def test_pass_rate_chart_draws_either_interval():
    run = matrix_run()

    def whiskers(fig):
        out = {}
        for trace in fig.data:
            if trace.type == "bar":
                for label, x, plus in zip(trace.y, trace.x, trace.error_x.array, strict=True):
                    out[label] = x + plus
        return out

    jeff = run.plot.pass_rates(interval="jeffreys")
    assert "95% Jeffreys interval" in jeff.layout.title.text
    nine = "stats.py:t_nine"
    assert whiskers(jeff)[nine] == pytest.approx(100 * TB_CRED_INT["t_nine"][1], abs=1e-9)
    wil = run.plot.pass_rates()
    assert "95% Wilson interval" in wil.layout.title.text
    assert whiskers(wil)[nine] != pytest.approx(whiskers(jeff)[nine])
    with pytest.raises(ValueError, match="has wilson intervals"):
        pass_rates(run.stability(), interval="jeffreys")


def test_summary_card_shows_mean_pass_with_its_interval():
    text = matrix_run().summary._repr_mimebundle_()["text/plain"]
    assert "53.3% of runs passed (95% CI 40.8% to 65.6%)" in text


def test_cli_summary_prints_mean_pass_with_its_jeffreys_interval(tmp_path):
    # 30 of 36 runs pass; eval_utils.cred_int(30, 36) = (0.68832, 0.92730)
    examples = Path(__file__).resolve().parents[1] / "examples" / "expense"
    out = tmp_path / "out.jsonl"
    args = ["run", "-i", str(examples), "-n", "demo:expense", "--runs", "3", "-o", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "convlab", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 1, done.stderr
    assert "Mean pass: 83.3% of runs (95% CI 68.8% to 92.7%)" in done.stderr  # the summary
