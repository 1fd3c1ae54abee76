from specialFilter import specialFilter


def test_example():
    assert specialFilter([5, -2, 1, -5]) == 0
