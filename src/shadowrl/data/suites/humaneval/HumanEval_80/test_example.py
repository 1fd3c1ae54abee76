from is_happy import is_happy


def test_example():
    assert is_happy("a") == False , "a"
