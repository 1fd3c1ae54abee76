from x_or_y import x_or_y


def test_example():
    assert x_or_y(7, 34, 12) == 34
