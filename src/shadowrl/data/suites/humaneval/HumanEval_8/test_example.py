from sum_product import sum_product


def test_example():
    assert sum_product([]) == (0, 1)
