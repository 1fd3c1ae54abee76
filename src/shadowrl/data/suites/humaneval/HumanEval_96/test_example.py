from count_up_to import count_up_to


def test_example():
    assert count_up_to(5) == [2,3]
