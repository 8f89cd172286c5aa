# The Python example of thinkingbox's test_case_format.md, verbatim below the imports,
# plus a test that continues a conversation from cloud_drive.meta.yaml.
from __future__ import annotations

# Global, applies to all test cases unless overridden
"""!
# scenario name
scenario: cloud_drive
"""

# This function is not a test case, because it does not have a YAML string
def check_file_content(x: TestContext, filename: str, expected_text: str):
    found = False
    for f in x.effects["cloud_drive"]["files"]:
        if f["path"] == filename:
            found = True
            text = f["text_content"]
            assert text == "some text\nsome more text", (
                f"File content, expected: {expected_text!r}, found {text!r}"
            )
            break
    assert found, f"File was not found: {filename}"


# This function is a test case
def test_append_ok(x: TestContext, judge: Judge):
    # The following only applies to this test case
    """!
    # scenario name. This was already defined above,
    # it can be omitted, unless the test needs a different one.
    scenario: cloud_drive

    # User query (str)
    query: |
        Find a file named more.txt, then append the following to its contents on a new line: 'END'

    # User context (str, optional), used to prompt the User simulator
    # model with additional context or instructions
    user_context: "If asked to confirm anything, confirm"

    # Bot instructions (str, optional), if present they're appended to the
    # scenario's bot instructions
    bot_instructions: "Current date: 2025-06-22"

    # Maximum user simulator turns (int, default: 10)
    max_user_sim_turns: 2

    # Maximum agent decode turns per user message (int, default: unlimited)
    # Each turn = one agent decode pass (may produce multiple assistant messages/tool calls)
    max_agent_sim_turns: 5

    # Additional initialization for the MCP servers. If present, this
    # is merged recursively into the scenario's world_state
    init:
        cloud_drive:
            files:
            -   path: Documents/more.txt
                text_content: "more text"
    """
    check_file_content(x, "Documents/file.txt", "more text\nEND")
    assert judge.text_yesno(
        x.response, "Does the message confirm that file.txt was modified?"
    )


def test_update_config_T2(x: TestContext, judge: Judge):
    """!
    query: Append 'timeout=30' to the configuration
    history: "create_then_update_config:0:"
    """
    check_file_content(x, "Documents/service_config.txt", "host=localhost\nport=8080\ntimeout=30")
