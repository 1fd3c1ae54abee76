from sum_squares import sum_squares


def test_example():
    assert sum_squares([1,2,3]) == 6
