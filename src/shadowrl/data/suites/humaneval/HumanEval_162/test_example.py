from string_to_md5 import string_to_md5


def test_example():
    assert string_to_md5('Hello world') == '3e25960a79dbc69b674cd4ec67a72c62'
