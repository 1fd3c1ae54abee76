from filter_by_substring import filter_by_substring


def test_example():
    assert filter_by_substring([], 'john') == []
