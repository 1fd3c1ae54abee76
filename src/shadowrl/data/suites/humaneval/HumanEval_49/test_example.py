from modp import modp


def test_example():
    assert modp(3, 5) == 3
