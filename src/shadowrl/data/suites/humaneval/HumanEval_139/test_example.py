from special_factorial import special_factorial


def test_example():
    assert special_factorial(4) == 288, "Test 4"
