from prod_signs import prod_signs


def test_example():
    assert prod_signs([1, 2, 2, -4]) == -9
