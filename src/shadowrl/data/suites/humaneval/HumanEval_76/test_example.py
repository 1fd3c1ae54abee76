from is_simple_power import is_simple_power


def test_example():
    assert is_simple_power(16, 2)== True, "This prints if this assert fails 1 (good for debugging!)"
