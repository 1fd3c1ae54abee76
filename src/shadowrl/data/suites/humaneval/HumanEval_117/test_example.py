from select_words import select_words


def test_example():
    assert select_words("Mary had a little lamb", 4) == ["little"], "First test error: " + str(select_words("Mary had a little lamb", 4))
