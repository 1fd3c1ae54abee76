from smallest_change import smallest_change


def test_example():
    assert smallest_change([1,2,3,5,4,7,9,6]) == 4
