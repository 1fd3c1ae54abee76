from greatest_common_divisor import greatest_common_divisor


def test_example():
    assert greatest_common_divisor(3, 7) == 1
