from simplify import simplify


def test_example():
    assert simplify("1/5", "5/1") == True, 'test1'
