from anti_shuffle import anti_shuffle


def test_example():
    assert anti_shuffle('Hi') == 'Hi'
