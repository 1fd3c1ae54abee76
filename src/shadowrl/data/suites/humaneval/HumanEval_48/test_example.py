from is_palindrome import is_palindrome


def test_example():
    assert is_palindrome('') == True
