from histogram import histogram


def test_example():
    assert histogram('a b b a') == {'a':2,'b': 2}, "This prints if this assert fails 1 (good for debugging!)"
