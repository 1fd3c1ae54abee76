from get_max_triples import get_max_triples


def test_example():
    assert get_max_triples(5) == 1
