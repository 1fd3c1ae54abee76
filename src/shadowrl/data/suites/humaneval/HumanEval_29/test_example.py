from filter_by_prefix import filter_by_prefix


def test_example():
    assert filter_by_prefix([], 'john') == []
