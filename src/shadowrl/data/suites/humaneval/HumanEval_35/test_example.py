from max_element import max_element


def test_example():
    assert max_element([1, 2, 3]) == 3
