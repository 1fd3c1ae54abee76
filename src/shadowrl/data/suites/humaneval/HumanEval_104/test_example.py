from unique_digits import unique_digits


def test_example():
    assert unique_digits([15, 33, 1422, 1]) == [1, 15, 33]
