from strlen import strlen


def test_example():
    assert strlen('') == 0
