from circular_shift import circular_shift


def test_example():
    assert circular_shift(100, 2) == "001"
