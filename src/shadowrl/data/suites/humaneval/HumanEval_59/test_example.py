from largest_prime_factor import largest_prime_factor


def test_example():
    assert largest_prime_factor(15) == 5
