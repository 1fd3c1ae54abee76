from sort_array import sort_array


def test_example():
    assert sort_array([]) == [], "Error"
