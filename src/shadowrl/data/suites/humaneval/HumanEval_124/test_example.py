from valid_date import valid_date


def test_example():
    assert valid_date('03-11-2000') == True
