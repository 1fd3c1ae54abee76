from digits import digits


def test_example():
    assert digits(5) == 5
