from prime_length import prime_length


def test_example():
    assert prime_length('Hello') == True
