from add_elements import add_elements


def test_example():
    assert add_elements([1,-2,-3,41,57,76,87,88,99], 3) == -4
