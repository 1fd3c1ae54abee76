from move_one_ball import move_one_ball


def test_example():
    assert move_one_ball([3, 4, 5, 1, 2])==True, "This prints if this assert fails 1 (good for debugging!)"
