from count_upper import count_upper


def test_example():
    assert count_upper('aBCdEf')  == 1
