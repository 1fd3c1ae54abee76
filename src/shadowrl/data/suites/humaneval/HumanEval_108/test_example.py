from count_nums import count_nums


def test_example():
    assert count_nums([]) == 0
