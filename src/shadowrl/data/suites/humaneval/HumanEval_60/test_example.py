from sum_to_n import sum_to_n


def test_example():
    assert sum_to_n(1) == 1
