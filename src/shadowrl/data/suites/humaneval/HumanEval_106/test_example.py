from f import f


def test_example():
    assert f(5) == [1, 2, 6, 24, 15]
