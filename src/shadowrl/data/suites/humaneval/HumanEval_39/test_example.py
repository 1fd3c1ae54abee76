from prime_fib import prime_fib


def test_example():
    assert prime_fib(1) == 2
