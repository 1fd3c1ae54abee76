from solution import solution


def test_example():
    assert solution([5, 8, 7, 1])    == 12
