from even_odd_count import even_odd_count


def test_example():
    assert even_odd_count(7) == (0, 1)
