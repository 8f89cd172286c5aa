"""run, arun and start share one set of options: the same signature, defaults and errors."""

from __future__ import annotations

import inspect

import pytest

import convlab as cl
from convlab.api import RUN_DEFAULTS


def test_help_shows_every_option_with_its_default() -> None:
    for fn in (cl.run, cl.arun, cl.start):
        sig = inspect.signature(fn)
        names = list(sig.parameters)
        assert names == ["suite", "agent", *RUN_DEFAULTS], fn.__name__
        assert sig.parameters["runs"].default == 1
        assert sig.parameters["progress"].default is None  # start() too: one default
        assert sig.parameters["timeout"].kind is inspect.Parameter.KEYWORD_ONLY
        assert "parallel: Instances at once." in (fn.__doc__ or "")
        assert 'messages[-1]["content"]' in (fn.__doc__ or "")


@pytest.mark.parametrize("fn", [cl.run, cl.start])
def test_a_misspelt_option_is_a_type_error_with_a_hint(fn: object) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'paralel'.*'parallel'"):
        fn("examples/expense", "demo:expense", paralel=2)  # type: ignore[operator]


def test_options_reach_the_run() -> None:
    run = cl.run("examples/expense", "demo:expense", runs=2, parallel=3, progress=False)
    assert run.settings["runs"] == 2 and run.settings["parallel"] == 3
    assert len(run.results) == 24


def test_return_types_and_the_agent_context_are_exported() -> None:
    assert cl.RunHandle is type(cl.start("examples/expense", "demo:expense", progress=False))
    assert cl.Answer is type(cl.ask("demo:expense", "hi"))
    assert cl.Comparison.__name__ == "Comparison"
    assert cl.AgentContext.__name__ == "AgentContext"
