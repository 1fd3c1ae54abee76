from factorize import factorize


def test_example():
    assert factorize(2) == [2]
