from fib import fib


def test_example():
    assert fib(10) == 55
