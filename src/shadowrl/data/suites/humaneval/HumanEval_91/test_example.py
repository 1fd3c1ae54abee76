from is_bored import is_bored


def test_example():
    assert is_bored("Hello world") == 0, "Test 1"
