from longest import longest


def test_example():
    assert longest([]) == None
