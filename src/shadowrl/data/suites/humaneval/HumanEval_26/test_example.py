from remove_duplicates import remove_duplicates


def test_example():
    assert remove_duplicates([]) == []
