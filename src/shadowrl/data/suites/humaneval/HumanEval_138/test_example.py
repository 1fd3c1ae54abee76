from is_equal_to_sum_even import is_equal_to_sum_even


def test_example():
    assert is_equal_to_sum_even(4) == False
