import pytest
from pydantic import ValidationError

import convlab as cl
from convlab.model.assertions import parse_assertion


def _suite() -> cl.Suite:
    return cl.Suite(
        id="demo",
        cases=[
            cl.Case(
                id="a",
                input=[cl.Message(content="hi <b>")],
                assertions=[{"kind": "contains", "value": "h"}],
                tags=["x"],
            ),
            cl.Case(
                id="b",
                mode="turns",
                turns=[
                    {"input": {"text": "one"}, "assertions": [{"kind": "regex", "pattern": "o+"}]},
                    {
                        "id": "s2",
                        "input": {"text": "two", "selection": {"option_index": 0}},
                        "variants": [{"id": "v", "input": {"text": "2"}}],
                    },
                ],
                assertions=[
                    {"kind": "check", "path": ["response", "status"], "operator": "exists"}
                ],
            ),
            cl.Case(
                id="c",
                mode="dynamic",
                simulator={"persona": "p", "goal": "g"},
                checkpoints=[{"id": "k", "assertion": {"kind": "contains", "value": "x"}}],
            ),
        ],
    )


def test_native_yaml_and_json_round_trip(tmp_path):
    suite = _suite()
    for name, text in (("s.yaml", suite.to_yaml()), ("s.json", suite.to_json())):
        path = tmp_path / name
        path.write_text(text)
        back = cl.load(path)
        assert back.model_copy(update={"sources": []}) == suite


def test_suite_df_contract_columns():
    df = _suite().df
    assert {"case_id", "name", "mode", "turns", "assertions", "tags", "source"} <= set(df.columns)
    assert list(df["mode"]) == ["standard", "turns", "dynamic"]
    assert list(df["turns"]) == [1, 2, 0]
    assert list(df["assertions"]) == [1, 2, 1]


def test_filter_by_regex_and_tags():
    suite = _suite()
    assert [c.id for c in suite.filter(run="^[ab]$").cases] == ["a", "b"]
    assert [c.id for c in suite.filter(tags="x").cases] == ["a"]


def test_reprs_escape_agent_and_file_text():
    suite = _suite()
    html = suite.cases[0]._repr_html_()
    assert "hi <b>" not in html
    assert "hi &lt;b&gt;" in html
    assert "contains" in str(suite.cases[0])


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"kind": "regex", "pattern": "("}, "cannot compile regex"),
        ({"kind": "check", "path": ["a"], "operator": "gte"}, "needs a value"),
        ({"kind": "check", "path": ["a"], "operator": "length", "value": -1}, "non-negative"),
        ({"kind": "check", "path": ["a"], "operator": "between", "value": 1}, "operator"),
        ({"kind": "judge"}, "exactly one"),
        ({"kind": "grader", "grader": "nocolon"}, "pkg.module:callable"),
        ({"kind": "metric", "metric": "equalty"}, "unknown standard metric"),
    ],
)
def test_bad_specs_are_rejected_when_built(spec, needle):
    with pytest.raises(ValidationError, match=needle):
        parse_assertion(spec)


def test_selection_needs_exactly_one_selector():
    with pytest.raises(ValidationError, match="exactly one"):
        cl.model.Selection(option_index=0, option_id="x")


_ONE_OF_EACH_KIND = {
    "regex": {"pattern": "a+"},
    "type": {"value": "string"},
    "tool_called": {"value": "search"},
    "tool_result": {"tool": "search"},
    "script": {"script": "scripts/check.py"},
    "check": {"path": ["a"], "operator": "equals", "value": None},
    "all": {"assertions": [{"kind": "contains", "value": "x"}]},
    "any": {"assertions": [{"kind": "equals"}]},
    "not": {"assertion": {"kind": "regex", "pattern": "b"}},
    "custom": {"evaluator": "scorer"},
    "metric": {"metric": "bleu"},
    "grader": {"grader": "graders:exact"},
    "python_test": {
        "function": "test_it",
        "code": "def test_it(x): pass",
        "file": "t.py",
        "line": 1,
    },
    "judge": {"question": "Is it polite?"},
}


def test_every_kind_keeps_its_tag_in_a_dump_without_defaults():
    """`kind` is the union's tag: a spec dumped without its defaults (the native form) says
    which kind it is, first, so it loads back: every kind, in Python and in JSON."""
    from typing import get_args

    from convlab.model.assertions import Assertion

    for cls in get_args(get_args(Assertion)[0]):
        tag = cls.model_fields["kind"].default
        spec = parse_assertion({"kind": tag, **_ONE_OF_EACH_KIND.get(tag, {})})
        dumped = spec.model_dump(exclude_defaults=True)
        assert next(iter(dumped.items())) == ("kind", tag), (cls.__name__, dumped)
        assert parse_assertion(dumped) == spec
        assert spec.model_dump_json(exclude_defaults=True).startswith(f'{{"kind":"{tag}"')
