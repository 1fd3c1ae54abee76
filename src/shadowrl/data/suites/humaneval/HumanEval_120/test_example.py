from maximum import maximum


def test_example():
    assert maximum([-3, -4, 5], 3) == [-4, -3, 5]
