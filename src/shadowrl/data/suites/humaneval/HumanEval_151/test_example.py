from double_the_difference import double_the_difference


def test_example():
    assert double_the_difference([]) == 0 , "This prints if this assert fails 1 (good for debugging!)"
