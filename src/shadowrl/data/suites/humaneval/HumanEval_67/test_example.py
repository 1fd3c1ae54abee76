from fruit_distribution import fruit_distribution


def test_example():
    assert fruit_distribution("5 apples and 6 oranges",19) == 8
