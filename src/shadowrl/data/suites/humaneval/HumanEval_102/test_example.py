from choose_num import choose_num


def test_example():
    assert choose_num(12, 15) == 14
