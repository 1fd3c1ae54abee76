from make_palindrome import make_palindrome


def test_example():
    assert make_palindrome('') == ''
