from fix_spaces import fix_spaces


def test_example():
    assert fix_spaces("Example") == "Example", "This prints if this assert fails 1 (good for debugging!)"
