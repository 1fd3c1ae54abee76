from split_words import split_words


def test_example():
    assert split_words("Hello world!") == ["Hello","world!"]
