from rolling_max import rolling_max


def test_example():
    assert rolling_max([]) == []
