from pairs_sum_to_zero import pairs_sum_to_zero


def test_example():
    assert pairs_sum_to_zero([1, 3, 5, 0]) == False
