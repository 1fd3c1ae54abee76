from derivative import derivative


def test_example():
    assert derivative([3, 1, 2, 4, 5]) == [1, 4, 12, 20]
