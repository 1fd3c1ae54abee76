from get_row import get_row


def test_example():
    assert get_row([], 1) == []
