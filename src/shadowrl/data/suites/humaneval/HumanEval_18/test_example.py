from how_many_times import how_many_times


def test_example():
    assert how_many_times('', 'x') == 0
