from is_prime import is_prime


def test_example():
    assert is_prime(6) == False
