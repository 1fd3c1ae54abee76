from rescale_to_unit import rescale_to_unit


def test_example():
    assert rescale_to_unit([2.0, 49.9]) == [0.0, 1.0]
