from concatenate import concatenate


def test_example():
    assert concatenate([]) == ''
