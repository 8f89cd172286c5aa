# One test run 10 times by tests/test_stats_thinkingbox.py; its row is PPPPPFFFEE. The agent
# there answers each run with one letter of the row: P (the test returns normally), F (an
# AssertionError), E (the test raises RuntimeError).
"""!
scenario: stats
"""


def outcome(x):
    if x.response == "F":
        assert False, "the reply was F"
    if x.response == "E":
        raise RuntimeError("the test crashed on E")
    assert x.response == "P", x.response


def t_raises(x, judge):
    """!
    query: t_raises
    """
    outcome(x)
