from below_zero import below_zero


def test_example():
    assert below_zero([]) == False
