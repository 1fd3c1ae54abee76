from all_prefixes import all_prefixes


def test_example():
    assert all_prefixes('') == []
