from words_string import words_string


def test_example():
    assert words_string("Hi, my name is John") == ["Hi", "my", "name", "is", "John"]
