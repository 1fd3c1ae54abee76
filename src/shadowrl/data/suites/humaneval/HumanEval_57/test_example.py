from monotonic import monotonic


def test_example():
    assert monotonic([1, 2, 4, 10]) == True
