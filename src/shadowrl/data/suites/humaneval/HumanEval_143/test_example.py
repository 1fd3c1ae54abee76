from words_in_sentence import words_in_sentence


def test_example():
    assert words_in_sentence("This is a test") == "is"
