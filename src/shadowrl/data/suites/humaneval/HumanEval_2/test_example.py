from truncate_number import truncate_number


def test_example():
    assert truncate_number(3.5) == 0.5
