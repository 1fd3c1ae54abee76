from can_arrange import can_arrange


def test_example():
    assert can_arrange([1,2,4,3,5])==3
