from triples_sum_to_zero import triples_sum_to_zero


def test_example():
    assert triples_sum_to_zero([1, 3, 5, 0]) == False
