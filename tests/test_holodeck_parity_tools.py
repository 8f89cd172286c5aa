"""The parts of the HoloDeck side-by-side run that need no HoloDeck (in the default suite).

The scripted server must give both APIs the same model, and the venv lookup must fail loudly;
tests/test_holodeck_parity_real.py relies on both.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from parity import side_by_side as sbs
from parity.scripted_openai import serve

import convlab as cl

SCRIPT = {
    "what is 2009 minus 2008?": [
        {"tools": [["subtract", {"a": 206588, "b": 181001}]]},
        {"text": "25587"},
    ],
    "fail": [{"error": 500}],
}


def post(port: int, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read())


def test_both_apis_get_the_same_tool_call_then_the_same_text() -> None:
    user = {"role": "user", "content": "what is 2009 minus 2008?"}
    with serve(SCRIPT) as server:
        port = server.server_address[1]
        _, chat = post(port, "chat/completions", {"messages": [user]})
        _, resp = post(port, "responses", {"input": [user]})
        call = chat["choices"][0]["message"]["tool_calls"][0]
        item = resp["output"][0]
        assert (
            (call["function"]["name"], json.loads(call["function"]["arguments"]))
            == (
                item["name"],
                json.loads(item["arguments"]),
            )
            == ("subtract", {"a": 206588, "b": 181001})
        )
        # after the tool's result, the final text on either API
        _, chat = post(
            port,
            "chat/completions",
            {"messages": [user, chat["choices"][0]["message"], {"role": "tool", "content": "x"}]},
        )
        _, resp = post(
            port,
            "responses",
            {
                "input": [
                    user,
                    item,
                    {"type": "function_call_output", "call_id": "c", "output": "x"},
                ]
            },
        )
        assert chat["choices"][0]["message"]["content"] == "25587"
        assert resp["output"][0]["content"][0]["text"] == "25587"
        assert server.calls == {"chat": 2, "responses": 2}


def test_a_conversation_the_script_lacks_is_a_400_and_is_recorded() -> None:
    with serve(SCRIPT) as server:
        status, body = post(
            server.server_address[1], "responses", {"input": [{"role": "user", "content": "hi"}]}
        )
        assert status == 400 and "no reply for the conversation 'hi'" in body["error"]["message"]
        assert server.unscripted == [body["error"]["message"]]
        assert post(server.server_address[1], "responses", {"input": "fail"})[0] == 500


def test_convlab_runs_a_holodeck_file_on_the_scripted_model(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "test_cases:\n"
        "  - name: minus\n"
        "    input: what is 2009 minus 2008?\n"
        "    ground_truth: '25587'\n"
        "    expected_tools: [subtract]\n"
        "    evaluations: [{type: standard, metric: numeric}]\n",
        encoding="utf-8",
    )

    def subtract(a, b):  # type: ignore[no-untyped-def]
        """a - b."""
        return str(a - b)

    with serve(SCRIPT) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        (case,) = sbs.outcomes_convlab(sbs.run_convlab(path, url, [subtract]))
    assert case.passed
    assert case.turns[0].tools == [("subtract", {"a": 206588, "b": 181001})]
    assert case.turns[0].metrics == [("numeric", True)] and case.turns[0].response == "25587"
    assert isinstance(cl.load(path), cl.Suite)


# What HoloDeck 0.7.1 does with a tool call's arguments text, end to end: the OpenAI Agents
# SDK hands the text to holodeck/lib/backends/openai_agents_backend.py `_parse_tool_arguments`
# (`json.loads`, which keeps a 30-digit integer an integer; `""`, `null` and any text that
# is not a JSON object become `{"raw": <the text>}`), then
# holodeck/lib/test_runner/tool_arg_matcher.py `match_regex` (`re.fullmatch` over `str()`)
# and `match_literal`. Each row: the text the model sent, the expected `args`, the verdict.
ARGUMENT_TEXTS = [
    ('{"v": 123456789012345678901234567890}', '{v: {regex: "[0-9]+"}}', True),
    ('{"v": 123456789012345678901234567890}', "{v: 123456789012345678901234567890}", True),
    # `match_literal` compares numbers as `float(expected) == float(actual)`
    ('{"v": 123456789012345678901234567891}', "{v: 123456789012345678901234567890}", True),
    ('{"v": 123456789012345678901234567890}', "{v: 123456789012345678901234567890.5}", True),
    ('{"v": 1234567890123456789}', '{v: {regex: "1234567890123456789"}}', True),
    ('{"v": "x"}', '{v: {regex: "[0-9]+"}}', False),
    ("", '{raw: ""}', True),
    ("null", '{raw: "null"}', True),
    ("[1, 2]", '{raw: {regex: "\\\\[1, 2\\\\]"}}', True),
    # Deliberate differences (docs/holodeck.md): HoloDeck's OpenAI Agents SDK backend refuses
    # text that is not JSON (the turn is an agent error, no call recorded), and its
    # `json.loads` reads `-0` as the integer 0, so a regex there reads "0"
    ("not json", '{raw: {regex: "not.*"}}', True),
    ('{"v": -0}', '{v: {regex: "-0[.]0"}}', True),
]


@pytest.mark.parametrize(("text", "args", "matched"), ARGUMENT_TEXTS)
def test_argument_texts_through_the_openai_adapter_as_holodeck(
    tmp_path: Path, text: str, args: str, matched: bool
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "test_cases:\n"
        "  - name: keep\n"
        "    input: keep the reference\n"
        f"    expected_tools: [{{name: keep, args: {args}}}]\n",
        encoding="utf-8",
    )
    got: list[Any] = []

    def keep(v=None):  # type: ignore[no-untyped-def]
        """Keep a reference."""
        got.append(v)
        return "kept"

    script = {"keep the reference": [{"tools": [["keep", text]]}, {"text": "kept"}]}
    with serve(script) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        run = sbs.run_convlab(path, url, [keep])
    (case,) = sbs.outcomes_convlab(run)
    assert case.turns[0].tools_matched is matched, case.turns[0].tool_errors
    assert case.passed is matched
    if text.startswith("{"):  # the tool got the value itself: an integer stays an integer
        sent = json.loads(text, parse_int=lambda s: -0.0 if s == "-0" else int(s))["v"]
        assert got == [sent] and type(got[0]) is type(sent)


def test_a_python_without_holodeck_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVLAB_HOLODECK_PYTHON", sys.executable)
    with pytest.raises(RuntimeError, match=r"CONVLAB_HOLODECK_PYTHON=.* has no HoloDeck 0\.7\.1"):
        sbs.holodeck_python()


def test_the_stamp_holds_two_tree_hashes() -> None:
    """.ci/run compares it with `git rev-parse HEAD:convlab/formats HEAD:convlab/checks`."""
    lines = (sbs.HERE / "holodeck-verified.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(len(h) == 40 and int(h, 16) >= 0 for h in lines)
