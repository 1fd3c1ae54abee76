from add import add


def test_example():
    assert add(0, 1) == 1
