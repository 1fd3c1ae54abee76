from will_it_fly import will_it_fly


def test_example():
    assert will_it_fly([3, 2, 3], 9) is True
