from filter_integers import filter_integers


def test_example():
    assert filter_integers([]) == []
