from eat import eat


def test_example():
    assert eat(5, 6, 10) == [11, 4], "Error"
