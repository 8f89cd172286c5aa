"""The HTML kit's stylesheet travels once: once per notebook (the first view shown in the
kernel session carries it), never with the live tree's redraws, once per standalone page."""

from __future__ import annotations

import time
from typing import Any

import pytest

from convlab.htmlkit import STYLESHEET, one_style, style_html
from tests.test_progress import _listener_run
from tests.test_table_bundle import _cell, kernel  # noqa: F401  (the fixture)

STYLE = "<style data-convlab-style>"

SETUP = """
import convlab as cl
from convlab.model import Case, Message, Suite
suite = Suite(id="s", cases=[Case(id="c", input=[Message(content="hi")])])
run = cl.run(suite, lambda messages: "hello", progress=False)
"""


@pytest.mark.slow
def test_in_a_notebook_only_the_first_view_carries_the_stylesheet(kernel: Any) -> None:  # noqa: F811
    assert _cell(kernel, SETUP, "setup") == []
    first = _cell(kernel, "run.summary", "A")
    assert len(first) == 1 and first[0].count(STYLE) == 1
    later = _cell(kernel, "display(run.summary); display(run.summary)", "B")
    assert [STYLE in out for out in later] == [False, False]
    assert all(len(out.encode()) < 1_500 for out in later)  # the card alone
    # the carrier's cell run again replaces its output: its new view carries the stylesheet
    assert [STYLE in out for out in _cell(kernel, "run.summary", "A")] == [True]


def test_the_live_trees_redraws_carry_no_stylesheet() -> None:
    from convlab.notebook.progress import LiveTree

    tree = LiveTree(interval=0.01)
    sent: list[str] = []
    tree.header.observe(lambda change: sent.append(change["new"]), names="value")
    tree.body.observe(lambda change: sent.append(change["new"]), names="value")
    _listener_run(tree, 50)
    time.sleep(0.05)
    assert sent and not any("<style" in value for value in sent)
    assert tree.style.value == style_html()  # sent once, with the tree itself


def test_a_page_keeps_one_stylesheet_in_its_head() -> None:
    page = f"<html><head></head><body>{style_html()}<div class='convlab'>a</div>{style_html()}"
    kept = one_style(page + "</body></html>")
    assert kept.count(STYLESHEET) == 1 and kept.index(STYLE) < kept.index("</head>")
