from tri import tri


def test_example():
    assert tri(3) == [1, 3, 2.0, 8.0]
