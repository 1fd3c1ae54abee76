from count_distinct_characters import count_distinct_characters


def test_example():
    assert count_distinct_characters('') == 0
