from generate_integers import generate_integers


def test_example():
    assert generate_integers(2, 10) == [2, 4, 6, 8], "Test 1"
