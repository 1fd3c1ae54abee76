from largest_smallest_integers import largest_smallest_integers


def test_example():
    assert largest_smallest_integers([2, 4, 1, 3, 5, 7]) == (None, 1)
