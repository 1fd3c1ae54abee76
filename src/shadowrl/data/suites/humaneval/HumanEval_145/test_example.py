from order_by_points import order_by_points


def test_example():
    assert order_by_points([1, 11, -1, -11, -12]) == [-1, -11, 1, -12, 11]
