from triangle_area import triangle_area


def test_example():
    assert triangle_area(5, 3) == 7.5
