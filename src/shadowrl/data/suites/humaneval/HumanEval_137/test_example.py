from compare_one import compare_one


def test_example():
    assert compare_one(1, 2) == 2
