from intersection import intersection


def test_example():
    assert intersection((1, 2), (2, 3)) == "NO"
