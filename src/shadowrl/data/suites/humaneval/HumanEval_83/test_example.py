from starts_one_ends import starts_one_ends


def test_example():
    assert starts_one_ends(1) == 1
