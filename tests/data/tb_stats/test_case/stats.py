# Tests run 10 times each by tests/test_stats_thinkingbox.py. The agent there answers each
# run with one letter of the test's row: P (the test returns normally), F (an
# AssertionError), E (the test raises RuntimeError); on D it raises itself, a decoding error.
"""!
scenario: stats
"""


def outcome(x):
    if x.response == "F":
        assert False, "the reply was F"
    if x.response == "E":
        raise RuntimeError("the test crashed on E")
    assert x.response == "P", x.response


def t_all(x, judge):
    """!
    query: t_all
    """
    outcome(x)


def t_nine(x, judge):
    """!
    query: t_nine
    """
    outcome(x)


def t_seven(x, judge):
    """!
    query: t_seven
    """
    outcome(x)


def t_half(x, judge):
    """!
    query: t_half
    """
    outcome(x)


def t_one(x, judge):
    """!
    query: t_one
    """
    outcome(x)


def t_none(x, judge):
    """!
    query: t_none
    """
    outcome(x)

