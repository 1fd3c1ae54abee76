from closest_integer import closest_integer


def test_example():
    assert closest_integer("10") == 10, "Test 1"
