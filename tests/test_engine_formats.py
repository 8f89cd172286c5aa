"""Suites of all four formats run on one function agent, each case with its expected status."""

from __future__ import annotations

import json
import textwrap

import convlab as cl


def agent(messages, ctx):
    text = messages[-1]["content"]
    if "add" in text:
        ctx.world.setdefault("sums", []).append(5)
        return cl.Reply(text="5", tool_calls=[cl.ToolCall("add", {"a": 2, "b": 3}, result=5)])
    return f"echo: {text}"


def statuses(path) -> dict[str, str]:
    run = cl.run(cl.load(path), agent, progress=False)
    return {r.case_id: r.status for r in run.results}


def test_jsonl(tmp_path):
    f = tmp_path / "cases.jsonl"
    f.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {
                    "id": "pass",
                    "input": "Hello",
                    "assert": {"type": "contains", "value": "echo: Hello"},
                },
                {
                    "id": "fail",
                    "input": "Hello",
                    "assert": [
                        {"type": "contains", "value": "echo"},
                        {"type": "regex", "value": "^bye"},
                    ],
                },
                {
                    "id": "tool",
                    "input": "please add",
                    "assert": {
                        "type": "tool_called",
                        "value": {"name": "add", "arguments": {"a": 2}},
                    },
                },
                {
                    "id": "dyn",
                    "input": "start",
                    "max_turns": 2,
                    "checkpoints": [
                        {"id": "a", "assert": {"type": "contains", "value": "echo: start"}}
                    ],
                },
                {"id": "skip", "input": "x", "skip": True},
            ]
        )
        + "\n"
    )
    assert statuses(f) == {
        "pass": "passed",
        "fail": "failed",
        "tool": "passed",
        "dyn": "passed",
        "skip": "skipped",
    }


def test_json_suite(tmp_path):
    f = tmp_path / "suite.json"
    check = {"kind": "check", "path": ["response", "text"], "operator": "equals"}
    f.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "id": "s",
                "name": "S",
                "scenarios": [
                    {
                        "id": "ok",
                        "name": "ok",
                        "writePolicy": "read_only",
                        "steps": [
                            {
                                "id": "one",
                                "input": {"text": "a"},
                                "assertions": [{**check, "id": "c", "value": "echo: a"}],
                            },
                            {
                                "id": "two",
                                "input": {"text": "b"},
                                "assertions": [{**check, "id": "c", "value": "echo: b"}],
                            },
                        ],
                    },
                    {
                        "id": "bad",
                        "name": "bad",
                        "writePolicy": "read_only",
                        "steps": [
                            {
                                "id": "one",
                                "input": {"text": "a"},
                                "assertions": [{**check, "id": "c", "value": "nope"}],
                            },
                        ],
                    },
                    {
                        "id": "ext",
                        "name": "ext",
                        "writePolicy": "external",
                        "steps": [{"id": "one", "input": {"text": "a"}}],
                    },
                    {
                        "id": "skp",
                        "name": "skp",
                        "writePolicy": "read_only",
                        "skipReason": "reviewed",
                        "steps": [{"id": "one", "input": {"text": "a"}}],
                    },
                ],
            }
        )
    )
    assert statuses(f) == {"ok": "passed", "bad": "failed", "ext": "blocked", "skp": "skipped"}


def test_yaml_cases(tmp_path):
    f = tmp_path / "agent.yaml"
    f.write_text(
        textwrap.dedent("""\
        name: calc
        test_cases:
          - name: sums
            turns:
              - input: "please add two and three"
                ground_truth: "5"
                expected_tools:
                  - name: add
                    args: {a: 2, b: {fuzzy: "3"}}
                evaluations:
                  - type: standard
                    metric: numeric
              - input: "thanks"
          - name: wrong
            turns:
              - input: "please add"
                ground_truth: "6"
                evaluations:
                  - type: standard
                    metric: equality
        """)
    )
    assert statuses(f) == {"sums": "passed", "wrong": "failed"}


def test_python_tests(tmp_path):
    (tmp_path / "scenario").mkdir()
    (tmp_path / "test_case").mkdir()
    (tmp_path / "scenario" / "calc.yaml").write_text(
        "world_state:\n  calc: {sums: [1]}\ntools:\n  - name: add\n"
    )
    (tmp_path / "test_case" / "calc.py").write_text(
        textwrap.dedent('''\
        """!
        scenario: calc
        """

        def test_adds(x, judge):
            """!
            query: please add
            init:
              calc: {sums: [0]}
            """
            assert x.response == "5", x.response
            assert x.effects["sums"] == [5]
            assert x.effects["calc"]["sums"] == [1, 0]

        def test_wrong(x, judge):
            """!
            query: hello
            """
            assert x.response == "nope", f"got {x.response!r}"

        def test_reward(x, judge):
            """!
            query: hello
            """
            return 0.25
        ''')
    )
    run = cl.run(cl.load(tmp_path), agent, progress=False)
    by = {r.case_id: r for r in run.results}
    assert {k: r.status for k, r in by.items()} == {
        "calc.py:test_adds": "passed",
        "calc.py:test_wrong": "failed",
        "calc.py:test_reward": "passed",
    }
    assert "got 'echo: hello'" in by["calc.py:test_wrong"].error
    assert by["calc.py:test_reward"].reward == 0.25
