from pluck import pluck


def test_example():
    assert pluck([4,2,3]) == [2, 1], "Error"
