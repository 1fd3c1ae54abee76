from change_base import change_base


def test_example():
    assert change_base(8, 3) == "22"
