from add import add


def test_example():
    assert add([4, 88]) == 88
