from largest_divisor import largest_divisor


def test_example():
    assert largest_divisor(3) == 1
