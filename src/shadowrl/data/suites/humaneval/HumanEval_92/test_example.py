from any_int import any_int


def test_example():
    assert any_int(2, 3, 1)==True, "This prints if this assert fails 1 (good for debugging!)"
