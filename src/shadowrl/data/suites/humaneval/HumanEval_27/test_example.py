from flip_case import flip_case


def test_example():
    assert flip_case('') == ''
