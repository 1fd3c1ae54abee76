from fib4 import fib4


def test_example():
    assert fib4(5) == 4
