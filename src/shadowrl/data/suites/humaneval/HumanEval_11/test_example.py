from string_xor import string_xor


def test_example():
    assert string_xor('111000', '101010') == '010010'
