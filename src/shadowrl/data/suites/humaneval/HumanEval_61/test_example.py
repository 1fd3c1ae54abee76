from correct_bracketing import correct_bracketing


def test_example():
    assert correct_bracketing("()")
