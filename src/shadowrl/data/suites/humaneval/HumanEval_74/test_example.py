from total_match import total_match


def test_example():
    assert total_match([], []) == []
