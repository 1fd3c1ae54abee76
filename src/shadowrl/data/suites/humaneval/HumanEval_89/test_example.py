from encrypt import encrypt


def test_example():
    assert encrypt('hi') == 'lm', "This prints if this assert fails 1 (good for debugging!)"
