from median import median


def test_example():
    assert median([3, 1, 2, 4, 5]) == 3
