from get_positive import get_positive


def test_example():
    assert get_positive([-1, -2, 4, 5, 6]) == [4, 5, 6]
