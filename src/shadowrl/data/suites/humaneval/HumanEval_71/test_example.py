from triangle_area import triangle_area


def test_example():
    assert triangle_area(3, 4, 5) == 6.00, "This prints if this assert fails 1 (good for debugging!)"
