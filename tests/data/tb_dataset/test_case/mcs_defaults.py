# Tests named by tbdata_example_test_list.yaml (mcs_defaults.py:test_mcs_defaults_medium),
# written for convlab's tests in the style of thinkingbox-data's mcs_defaults.py.
"""!
scenario: mcs_defaults
"""


def no_repeat(judge, response, direct_responses):
    return judge.no_repeat(response, direct_responses)


def test_mcs_defaults_difficult(x, judge):
    """!
    query: |
        What are your store hours and where are you located?
    """
    assert no_repeat(judge, x.response, x.tool_direct_responses)


def test_mcs_defaults_easy(x, judge):
    """!
    query: |
        What are your store hours?
    """
    assert no_repeat(judge, x.response, x.tool_direct_responses)


def test_mcs_defaults_medium(x, judge):
    """!
    query: |
        What are your store location and when are you open?
    max_agent_sim_turns: 3
    """
    assert no_repeat(judge, x.response, x.tool_direct_responses)


def test_mcs_defaults_legacy(x, judge):
    """!
    query: Are you open on Sundays?
    tags:
        labels: [legacy]
        skip: true
    """
    assert "closed" in x.response.lower()


async def test_not_a_test(x, judge):
    """!
    query: async functions are never tests
    """


class Grader:
    def test_method(self, x, judge):
        """!
        query: methods are never tests
        """
