from sort_numbers import sort_numbers


def test_example():
    assert sort_numbers('') == ''
