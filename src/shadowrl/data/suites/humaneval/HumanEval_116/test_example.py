from sort_array import sort_array


def test_example():
    assert sort_array([1,5,2,3,4]) == [1, 2, 4, 3, 5]
