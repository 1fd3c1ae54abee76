from get_closest_vowel import get_closest_vowel


def test_example():
    assert get_closest_vowel("yogurt") == "u"
