from do_algebra import do_algebra


def test_example():
    assert do_algebra(['**', '*', '+'], [2, 3, 4, 5]) == 37
