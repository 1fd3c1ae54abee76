from reverse_delete import reverse_delete


def test_example():
    assert reverse_delete("abcde","ae") == ('bcd',False)
