from is_nested import is_nested


def test_example():
    assert is_nested('[[]]') == True, "This prints if this assert fails 1 (good for debugging!)"
