from right_angle_triangle import right_angle_triangle


def test_example():
    assert right_angle_triangle(3, 4, 5) == True, "This prints if this assert fails 1 (good for debugging!)"
