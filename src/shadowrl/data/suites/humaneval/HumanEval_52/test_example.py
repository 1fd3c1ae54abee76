from below_threshold import below_threshold


def test_example():
    assert below_threshold([1, 2, 4, 10], 100)
