from exchange import exchange


def test_example():
    assert exchange([1, 2, 3, 4], [1, 2, 3, 4]) == "YES"
