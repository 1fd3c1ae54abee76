from search import search


def test_example():
    assert search([5, 5, 5, 5, 1]) == 1
