from remove_vowels import remove_vowels


def test_example():
    assert remove_vowels('') == ''
