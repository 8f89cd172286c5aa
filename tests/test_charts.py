"""Plotly charts (convlab.notebook.charts): what each figure shows matches the run's tables.

Runs are real (`convlab.run` on the demo expense suite, which has dynamic cases with
checkpoints, and on small suites answered by deterministic, per-case flaky function agents),
so the charts are checked against `run.stability()`, `run.df` and `run.checkpoints_df` as
they really come out. Case ids are untrusted: one of them is an `<img onerror>` tag, and it
must reach every figure escaped.
"""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from offline_browser import Opened

import convlab as cl
from convlab.htmlkit import STABILITY_COLORS, STABILITY_TEXT_COLORS, STATUS_COLORS
from convlab.notebook import charts

ROOT = Path(__file__).resolve().parent.parent
XSS = "<img src=x onerror=alert(1)>"
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;"
PLOTLY = "application/vnd.plotly.v1+json"

# per case: does its k-th call pass?  10 runs -> 100%, 90%, 50%, 30%, 0%
PASSES: dict[str, Callable[[int], bool]] = {
    "always": lambda k: True,
    "most": lambda k: k != 3,
    "every-other": lambda k: k % 2 == 0,
    XSS: lambda k: k % 10 in (0, 4, 7),
    "never": lambda k: False,
}
CLASSES = {  # `stability`: a case that never passes is not unstable, it always fails
    "always": "stable",
    "most": "mostly stable",
    "every-other": "unstable",
    XSS: "highly unstable",
    "never": "always fails",
}


def _suite(ids: list[str], skipped: tuple[str, ...] = ()) -> cl.Suite:
    return cl.Suite(
        id="charts",
        cases=[
            cl.Case(
                id=cid,
                input=[cl.Message(content=cid)],
                assertions=[{"kind": "contains", "value": "ok"}],
                skip="not today" if cid in skipped else None,
            )
            for cid in ids
        ],
    )


def _agent(passes: dict[str, Callable[[int], bool]]) -> Callable[..., str]:
    """A function agent that answers 'ok' (pass) or 'nope' (fail) by a per-case call count."""
    calls: dict[str, int] = {}

    def agent(messages: list[dict[str, Any]], ctx: Any) -> str:
        k = calls.get(ctx.case.id, 0)
        calls[ctx.case.id] = k + 1
        return "ok" if passes.get(ctx.case.id, lambda _: True)(k) else "nope"

    return agent


@pytest.fixture(scope="module")
def flaky() -> cl.Run:
    return cl.run(_suite(list(PASSES)), _agent(PASSES), runs=10, parallel=2, progress=False)


@pytest.fixture(scope="module")
def expense() -> cl.Run:
    return cl.run(cl.load(ROOT / "examples" / "expense"), "demo:expense", runs=3, progress=False)


@pytest.fixture(scope="module")
def comparison(flaky: cl.Run) -> Any:
    after = {**PASSES, "always": lambda k: False, "never": lambda k: True, "most": lambda k: True}
    ids = [c for c in PASSES if c != "every-other"] + ["brand-new"]
    later = cl.run(_suite(ids), _agent(after), runs=10, parallel=2, progress=False)
    return cl.compare(flaky, later)


def _plain(fig: Any) -> str:
    """The figure as JSON text with plotly's own `\\u003c` escapes undone."""
    return json.dumps(json.loads(pio.to_json(fig)), ensure_ascii=False)


def _traces(fig: Any, kind: str) -> list[Any]:
    return [t for t in fig.data if t.type == kind]


def _unescape(label: str) -> str:
    return label.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


# -- the Figure type and its display ----------------------------------------------------------


def test_import_convlab_and_charts_do_not_load_plotly() -> None:
    code = (
        "import sys, convlab, convlab.notebook.charts\n"
        "heavy = [m for m in ('plotly', 'ipywidgets', 'IPython', 'itables') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_figure_is_a_plotly_figure_that_stays_itself(flaky: cl.Run) -> None:
    fig = flaky.plot.pass_rates()
    assert type(fig) is go.Figure is charts.Figure  # plotly's own class, not a subclass
    assert fig.update_layout(title_text="mine") is fig
    assert fig.add_trace(go.Scatter(x=[1], y=["always"])) is fig
    assert fig.update_traces(opacity=0.9) is fig
    assert PLOTLY in fig._repr_mimebundle_() and "text/html" in fig._repr_mimebundle_()
    for clone in (pickle.loads(pickle.dumps(fig)), copy.deepcopy(fig)):
        assert type(clone) is go.Figure
        assert clone.layout.title.text == "mine"


def test_mime_bundle_has_the_plotly_mimetype_offline_html_and_text(flaky: cl.Run) -> None:
    fig = flaky.plot.pass_rates()
    bundle = fig._repr_mimebundle_()
    assert set(bundle) == {PLOTLY, "text/html", "text/plain"}
    spec = bundle[PLOTLY]
    assert set(spec) >= {"data", "layout", "config"}  # what JupyterLab's renderer reads
    assert spec["config"]["displaylogo"] is False
    assert json.loads(json.dumps(spec)) == spec  # plain JSON
    page = bundle["text/html"]
    assert "Plotly.newPlot" in page and "require(" not in page
    assert "plotly.js v" not in page and len(page) < 40_000  # no plotly.js inside
    assert 'typeof window.Plotly==="undefined"' in page  # says so when plotly.js is missing
    assert bundle["text/plain"].startswith("<convlab Figure: Pass rate per case")
    assert set(fig._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    assert PLOTLY not in fig._repr_mimebundle_(exclude=[PLOTLY])


def test_ipython_displays_our_bundle_not_plotlys_renderer(flaky: cl.Run) -> None:
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(flaky.plot.stability())
    assert {PLOTLY, "text/html", "text/plain"} <= set(data)
    assert "Plotly.newPlot" in data["text/html"]


def test_show_still_works(flaky: cl.Run, capsys: pytest.CaptureFixture[str]) -> None:
    flaky.plot.turns().show(renderer="json")
    assert "data" in capsys.readouterr().out


def test_run_plot_lists_its_charts(flaky: cl.Run) -> None:
    text = repr(flaky.plot)
    for name in ("pass_rates", "stability", "durations", "checkpoints", "turns"):
        assert f".{name}()" in text
        assert isinstance(getattr(flaky.plot, name)(), go.Figure)


# -- pass rates and stability ----------------------------------------------------------------


def test_pass_rates_show_the_stability_table_worst_first(flaky: cl.Run) -> None:
    st = flaky.stability().set_index("case_id")
    fig = flaky.plot.pass_rates()
    bars = _traces(fig, "bar")
    seen = {}
    for bar in bars:
        cls = next(k for k, v in STABILITY_COLORS.items() if v == bar.marker.color)
        for y, x, up, down in zip(
            bar.y, bar.x, bar.error_x.array, bar.error_x.arrayminus, strict=True
        ):
            cid = _unescape(y)
            row = st.loc[cid]
            seen[cid] = cls
            assert x == pytest.approx(row["pass_rate"])
            assert x + up == pytest.approx(row["ci_high"])  # whiskers = Wilson interval
            assert x - down == pytest.approx(row["ci_low"])
            assert cls == row["stability"]
    assert seen == CLASSES
    order = [_unescape(y) for y in fig.layout.yaxis.categoryarray]
    rates = [st.loc[c, "pass_rate"] for c in order]
    assert rates == sorted(rates) and order[-1] == "always"  # worst on top
    right = fig.layout.yaxis2.ticktext
    assert "3/10" in right[order.index(XSS)]
    assert STABILITY_TEXT_COLORS["always fails"] in right[0]
    legend = [t.name for t in bars]
    assert "always fails (no run passed)" in legend and "unstable" not in legend[-1]
    red = next(t for t in bars if ESCAPED in t.y)
    custom = red.customdata[list(red.y).index(ESCAPED)]
    assert list(custom[:3]) == [ESCAPED, 10, 3]  # hover: case id, runs, passed, CI, class
    assert custom[3] == f"{st.loc[XSS, 'ci_low']:.1f}%" and "95% CI" in red.hovertemplate


def test_pass_rates_take_a_run_a_stability_table_or_an_instance_frame(flaky: cl.Run) -> None:
    def points(fig: Any) -> dict[str, float]:
        return {y: x for t in _traces(fig, "bar") for y, x in zip(t.y, t.x, strict=True)}

    want = points(charts.pass_rates(flaky))
    assert points(charts.pass_rates(flaky.stability())) == want
    assert points(charts.pass_rates(flaky.df)) == want


def test_a_case_that_never_ran_is_listed_as_not_run() -> None:
    ids = ["ran", "skipped-one"]
    run = cl.run(_suite(ids, skipped=("skipped-one",)), _agent({}), runs=2, progress=False)
    fig = charts.pass_rates(run)
    grey = [t for t in _traces(fig, "bar") if "no verdict" in t.name]
    assert [list(t.y) for t in grey] == [["skipped-one"]]
    assert "not run" in fig.layout.yaxis2.ticktext[-1]
    stab = charts.stability(run)
    assert "no verdict (not run)" in list(stab.data[0].x)


def test_stability_counts_cases_per_class_in_class_order(flaky: cl.Run) -> None:
    fig = flaky.plot.stability()
    (bar,) = fig.data
    assert [x.split(" (")[0] for x in bar.x] == [
        "stable",
        "mostly stable",
        "unstable",
        "highly unstable",
        "always fails",
        "one run",
    ]
    counts = flaky.stability()["stability"].value_counts()
    assert list(bar.y) == [int(counts.get(c, 0)) for c in STABILITY_COLORS]
    assert list(bar.y) == [1, 1, 1, 1, 1, 0]  # "never" always fails, not highly unstable
    assert list(bar.marker.color) == list(STABILITY_COLORS.values())
    assert "cases" in fig.layout.yaxis.title.text
    assert ESCAPED in bar.customdata[3][0]  # hover lists the cases, escaped


def test_a_frame_without_the_needed_columns_is_a_clear_error(flaky: cl.Run) -> None:
    bad = pd.DataFrame({"case_id": ["a"], "score": [1.0]})
    with pytest.raises(ValueError, match=r"pass_rate.*Pass a Run, run\.stability\(\)"):
        charts.pass_rates(bad)
    with pytest.raises(ValueError, match=r"checkpoint, reached.*run\.checkpoints_df"):
        charts.checkpoints(bad)
    with pytest.raises(ValueError, match=r"status, turns"):
        charts.turns(bad)
    with pytest.raises(ValueError, match=r"duration_ms"):
        charts.durations(bad)
    with pytest.raises(ValueError, match=r"presence.*convlab\.compare"):
        charts.compare_figure(bad)
    with pytest.raises(TypeError, match="not list"):
        charts.stability([1, 2])


# -- durations, checkpoints, turns -----------------------------------------------------------


def test_durations_show_every_instance_slowest_case_first(expense: cl.Run) -> None:
    df = expense.df
    fig = expense.plot.durations()
    (box,) = _traces(fig, "box")
    assert sorted(box.x) == pytest.approx(sorted(df["duration_ms"]))
    dots = {t.name: t for t in _traces(fig, "scatter")}
    assert set(dots) == set(df["status"])
    for status, t in dots.items():
        assert t.marker.color == STATUS_COLORS[status]
        assert len(t.x) == int((df["status"] == status).sum())
    means = df.groupby("case_id")["duration_ms"].mean()
    order = list(fig.layout.yaxis.categoryarray)
    assert order == sorted(order, key=lambda c: -means[c])
    assert "(ms)" in fig.layout.xaxis.title.text


def test_durations_from_a_stability_table_are_mean_with_min_max(flaky: cl.Run) -> None:
    st = flaky.stability().set_index("case_id")
    (dot,) = charts.durations(flaky.stability()).data
    for y, x, up, down in zip(dot.y, dot.x, dot.error_x.array, dot.error_x.arrayminus, strict=True):
        row = st.loc[_unescape(y)]
        assert x == pytest.approx(row["duration_mean_ms"])
        assert x + up == pytest.approx(row["duration_max_ms"])
        assert x - down == pytest.approx(row["duration_min_ms"])


def test_checkpoint_funnel_counts_instances_in_each_case_order(expense: cl.Run) -> None:
    cps = expense.checkpoints_df
    fig = expense.plot.checkpoints()
    funnels = _traces(fig, "funnel")
    cases = {c.id: c for c in expense.suite.cases if c.checkpoints}
    assert [t.name for t in funnels] == list(cases)
    for t in funnels:
        labels = list(t.y[1])
        ids = [cp.id for cp in cases[t.name].checkpoints]
        assert [lab.split(". ", 1)[1].removesuffix(" (optional)") for lab in labels] == ids
        mine = cps[cps["case_id"] == t.name]
        reached = mine.groupby("checkpoint", sort=False)["reached"].sum()
        assert list(t.x) == [int(reached[i]) for i in ids]
        assert all(" of 3 " in text for text in t.text)  # 3 runs of each dynamic case
    receipt = next(t for t in funnels if t.name == "expense-dynamic-receipt")
    assert list(receipt.x) == [0, 3] and receipt.textposition[0] == "outside"
    assert "(optional)" in next(t for t in funnels if t.name == "expense-dynamic").y[1][3]
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # first checkpoint on top


def test_checkpoints_take_the_frame_and_say_when_there_are_none(
    expense: cl.Run, flaky: cl.Run
) -> None:
    from_frame = charts.checkpoints(expense.checkpoints_df)
    assert [list(t.x) for t in _traces(from_frame, "funnel")] == [
        list(t.x) for t in _traces(expense.plot.checkpoints(), "funnel")
    ]
    empty = flaky.plot.checkpoints()
    assert not empty.data
    assert "No checkpoints in this run" in empty.layout.annotations[0].text
    assert "text/html" in empty._repr_mimebundle_()


def test_turns_split_passed_and_not_passed(expense: cl.Run) -> None:
    df = expense.df
    fig = expense.plot.turns()
    passed, failed = fig.data
    assert passed.name == "passed" and passed.marker.color == STATUS_COLORS["passed"]
    assert failed.name.startswith("not passed")
    for trace, mask in ((passed, df["status"] == "passed"), (failed, df["status"] != "passed")):
        want = df[mask]["turns"].value_counts()
        assert dict(zip(trace.x, trace.y, strict=True)) == {t: int(want.get(t, 0)) for t in trace.x}
    assert sum(passed.y) + sum(failed.y) == len(df)
    assert fig.layout.barmode == "stack"


def test_nothing_ran_gives_a_figure_that_says_so() -> None:
    run = cl.run(_suite(["a"], skipped=("a",)), _agent({}), progress=False)
    for fig in (run.plot.durations(), run.plot.turns()):
        assert not fig.data and "No instance ran" in fig.layout.annotations[0].text


def test_many_cases_grow_the_chart_and_put_the_axis_on_top() -> None:
    ids = [f"case-{i:03d}" for i in range(300)]
    frame = pd.DataFrame({"case_id": ids, "status": "passed", "duration_ms": 1.0})
    small = charts.pass_rates(frame.head(5))
    big = charts.pass_rates(frame)
    assert big.layout.height > 10 * small.layout.height / 2
    assert big.layout.xaxis.side == "top" and small.layout.xaxis.side == "bottom"
    assert big.layout.yaxis.range == (299.5, -0.5)  # no blank padding rows


# -- compare ---------------------------------------------------------------------------------


def test_compare_marks_changes_beyond_noise_and_one_sided_cases(comparison: Any) -> None:
    fig = comparison.plot()
    by_name = {t.name: t for t in fig.data if t.name and t.mode == "markers"}
    worse = by_name["worse, beyond noise"]
    better = by_name["better, beyond noise"]
    assert [_unescape(y) for y in worse.y] == ["always"]
    assert set(better.y) == {"never"}
    assert worse.marker.color == "#cf222e" and worse.marker.symbol[0] == "triangle-left"
    assert better.marker.color == "#1a7f37" and better.marker.symbol[0] == "triangle-right"
    rows = comparison.set_index("case_id")
    assert worse.x[0] == rows.loc["always", "pass_rate_after"]
    assert list(by_name["only in the after run"].y) == ["brand-new"]
    assert list(by_name["only in the before run"].y) == ["every-other"]
    assert by_name["only in the before run"].x[0] == rows.loc["every-other", "pass_rate_before"]
    order = list(fig.layout.yaxis.categoryarray)
    assert set(order[:2]) == {"always", "never"}  # beyond noise first
    assert order[-2:] == ["brand-new", "every-other"]  # one-sided last
    ticks = dict(zip(order, fig.layout.yaxis.ticktext, strict=True))
    assert ticks["always"].startswith("<b>") and "only in the after run" in ticks["brand-new"]
    assert fig.layout.showlegend
    assert "beyond noise" in worse.customdata[0][4] and "p =" in worse.customdata[0][4]


def test_compare_figure_is_the_comparison_plot(comparison: Any) -> None:
    assert _plain(charts.compare_figure(comparison)).count("triangle") == _plain(
        comparison.plot()
    ).count("triangle")


# -- untrusted case ids ----------------------------------------------------------------------


def test_case_ids_are_escaped_in_every_figure(flaky: cl.Run, comparison: Any) -> None:
    figures = [
        flaky.plot.pass_rates(),
        flaky.plot.stability(),
        flaky.plot.durations(),
        flaky.plot.turns(),
        charts.durations(flaky.stability()),
        comparison.plot(),
    ]
    for fig in figures:
        text = _plain(fig)
        assert "<img" not in text, fig.layout.title.text
        assert ESCAPED in text, fig.layout.title.text
        assert "<img" not in fig._repr_mimebundle_()["text/html"]


def test_checkpoint_ids_are_escaped(expense: cl.Run) -> None:
    cps = expense.checkpoints_df.copy()
    cps["case_id"] = XSS
    cps["checkpoint"] = "<b>" + cps["checkpoint"] + "</b>"
    text = _plain(charts.checkpoints(cps))
    assert "<img" not in text and "<b>ask_type" not in text and "&lt;b&gt;ask_type" in text


# -- in a browser, the way a report shows them -------------------------------------------------


@pytest.mark.slow
def test_charts_draw_offline_with_plotly_js_loaded_once(
    browser: Any, flaky: cl.Run, expense: cl.Run, comparison: Any, tmp_path: Path
) -> None:
    js = Path(go.__file__).parent.parent / "package_data" / "plotly.min.js"
    figures = [
        expense.plot.pass_rates(),
        expense.plot.stability(),
        expense.plot.durations(),
        expense.plot.checkpoints(),
        expense.plot.turns(),
        flaky.plot.pass_rates(),
        comparison.plot(),
    ]
    body = "".join(f._repr_mimebundle_()["text/html"] for f in figures)
    page_file = tmp_path / "charts.html"
    page_file.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><script>{js.read_text()}</script>"
        f"</head><body>{body}</body></html>",
        encoding="utf-8",
    )
    opened = Opened(browser, page_file)
    page = opened.page
    page.wait_for_function(
        f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {len(figures)}"
    )
    drawn = page.evaluate(
        "Array.from(document.querySelectorAll('.plotly-graph-div'))"
        ".map(d => d.querySelectorAll('g.trace').length)"
    )
    images = page.evaluate("document.querySelectorAll('.plotly-graph-div img').length")
    ticks = page.evaluate(
        "Array.from(document.querySelectorAll('.ytick text')).map(t => t.textContent)"
    )
    opened.close()
    assert opened.errors == [] and opened.dialogs == [] and opened.left == []
    assert len(drawn) == len(figures) and all(n >= 1 for n in drawn)
    assert images == 0 and XSS in ticks  # the hostile id shows as text, runs nothing


# -- the experiment trade-off chart: every variant's name readable -------------------------------

CROWDED = [  # (variant, pass rate, cost): three expense_lite variants within 5% of each other
    ("expense/plain", 66.7, 0.052),
    ("expense/approval", 83.3, 0.061),
    ("expense/receipt", 83.3, 0.058),
    ("expense/both", 100.0, 0.066),
    ("expense_lite/plain", 66.7, 0.00310),
    ("expense_lite/approval", 66.7, 0.00318),
    ("expense_lite/receipt", 75.0, 0.00325),
    ("expense_lite/both", 83.3, 0.0041),
]


def _board(with_cost: bool = True) -> pd.DataFrame:
    rows = []
    for i, (variant, rate, cost) in enumerate(CROWDED):
        row = {"agent_variant": variant, "pass_rate": rate, "ci_low": rate - 20}
        row |= {"ci_high": min(rate + 10, 100), "latency_p50_ms": 40.0 + 12 * i}
        rows.append(row | ({"cost_usd": cost} if with_cost else {}))
    return pd.DataFrame(rows)


def test_tradeoff_draws_costs_spanning_orders_of_magnitude_on_a_log_axis() -> None:
    from convlab.notebook._charts_experiment import tradeoff

    fig = tradeoff(_board(), x="cost")
    assert fig.layout.xaxis.type == "log" and "log scale" in fig.layout.xaxis.title.text
    assert all(str(t).startswith("$") for t in fig.layout.xaxis.ticktext)
    names = sorted(a.text for a in fig.layout.annotations)
    assert names == sorted(v for v, _, _ in CROWDED)  # every name, whole
    near = tradeoff(_board().assign(cost_usd=[1.0 + i / 10 for i in range(8)]), x="cost")
    assert near.layout.xaxis.type == "linear"  # 1.0 to 1.7: no reason for a log axis


def test_tradeoff_with_no_prices_draws_latency_and_says_so() -> None:
    from convlab.notebook._charts_experiment import tradeoff

    fig = tradeoff(_board(with_cost=False))
    points = [t for t in fig.data if t.mode == "markers"]
    assert sum(len(t.x) for t in points) == len(CROWDED)
    assert "latency" in fig.layout.xaxis.title.text
    assert "no variant has a cost" in fig.layout.title.text
    assert "so latency is drawn" in fig.layout.title.text
    free = tradeoff(_board().assign(cost_usd=0.0))  # agents that cost nothing: the same
    assert "latency" in free.layout.xaxis.title.text


@pytest.mark.slow
@pytest.mark.parametrize("width", [640, 1100])
def test_tradeoff_labels_never_overlap_nor_get_clipped(
    browser: Any, tmp_path: Path, width: int
) -> None:
    from convlab.notebook._charts_experiment import tradeoff

    js = Path(go.__file__).parent.parent / "package_data" / "plotly.min.js"
    figures = [tradeoff(_board(), x="cost"), tradeoff(_board(with_cost=False))]
    body = "".join(f._repr_mimebundle_()["text/html"] for f in figures)
    page_file = tmp_path / "tradeoff.html"
    page_file.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><script>{js.read_text()}</script>"
        f"</head><body style='width:{width}px'>{body}</body></html>",
        encoding="utf-8",
    )
    opened = Opened(browser, page_file, width=width + 40)
    page = opened.page
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    charts_drawn = page.evaluate(
        """Array.from(document.querySelectorAll('.plotly-graph-div')).map(div => {
            const svg = div.querySelector('svg.main-svg').getBoundingClientRect();
            const box = r => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
            return {
                svg: box(svg),
                points: div.querySelectorAll('g.scatterlayer path.point').length,
                // a name drawn as a point's text or as an annotation: every one is checked
                labels: Array.from(div.querySelectorAll(
                    'g.annotation text.annotation-text, g.textpoint text'))
                    .map(t => ({text: t.textContent, box: box(t.getBoundingClientRect())})),
            };
        })"""
    )
    ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"tradeoff-{width}.png"), full_page=True)
    opened.close()
    assert opened.errors == [] and opened.left == []
    for chart in charts_drawn:
        assert chart["points"] >= len(CROWDED)
        labels = chart["labels"]
        assert sorted(lb["text"] for lb in labels) == sorted(v for v, _, _ in CROWDED)
        svg = chart["svg"]
        for lb in labels:  # inside the chart: nothing cut at its edges
            b = lb["box"]
            assert svg["left"] <= b["left"] and b["right"] <= svg["right"], lb
            assert svg["top"] <= b["top"] and b["bottom"] <= svg["bottom"], lb
        for i, a in enumerate(labels):
            for b in labels[i + 1 :]:
                apart = (
                    a["box"]["right"] <= b["box"]["left"]
                    or b["box"]["right"] <= a["box"]["left"]
                    or a["box"]["bottom"] <= b["box"]["top"]
                    or b["box"]["bottom"] <= a["box"]["top"]
                )
                assert apart, (a, b)
