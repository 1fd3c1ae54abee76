from get_odd_collatz import get_odd_collatz


def test_example():
    assert get_odd_collatz(14) == [1, 5, 7, 11, 13, 17]
