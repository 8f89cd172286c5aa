# The recursive-merge example of thinkingbox's test_case_format.md as a test (scenario my_scenario), in test_case/merge/
# so that "merge_example.py" is found by its prefix.
"""!
scenario: my_scenario
"""


def test_merge(x, judge):
    """!
    query: Show me my list
    init:
        my_server:
            my_list: [4, 5]
            my_dict:
                b: 11
                c: 12
    """
    assert x.effects["my_server"]["my_list"] == [1, 2, 3, 4, 5]


def test_new_servers(x, judge):
    """!
    query: Set up the other servers
    init:
        empty_server:
            ready: true
        new_server:
            items: [a]
    """
    assert x.effects["new_server"]["items"] == ["a"]
