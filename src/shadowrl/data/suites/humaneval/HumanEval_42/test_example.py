from incr_list import incr_list


def test_example():
    assert incr_list([]) == []
