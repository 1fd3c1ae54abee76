from int_to_mini_roman import int_to_mini_roman


def test_example():
    assert int_to_mini_roman(19) == 'xix'
