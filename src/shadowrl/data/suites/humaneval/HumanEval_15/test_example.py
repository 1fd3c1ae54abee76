from string_sequence import string_sequence


def test_example():
    assert string_sequence(0) == '0'
