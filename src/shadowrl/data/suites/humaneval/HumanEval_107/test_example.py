from even_odd_palindrome import even_odd_palindrome


def test_example():
    assert even_odd_palindrome(123) == (8, 13)
