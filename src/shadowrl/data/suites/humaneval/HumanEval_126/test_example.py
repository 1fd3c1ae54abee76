from is_sorted import is_sorted


def test_example():
    assert is_sorted([5]) == True
