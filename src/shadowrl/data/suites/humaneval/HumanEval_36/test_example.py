from fizz_buzz import fizz_buzz


def test_example():
    assert fizz_buzz(50) == 0
