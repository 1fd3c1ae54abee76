from is_multiply_prime import is_multiply_prime


def test_example():
    assert is_multiply_prime(5) == False
