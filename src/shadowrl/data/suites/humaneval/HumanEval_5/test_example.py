from intersperse import intersperse


def test_example():
    assert intersperse([], 7) == []
