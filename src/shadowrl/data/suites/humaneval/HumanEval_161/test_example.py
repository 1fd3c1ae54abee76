from solve import solve


def test_example():
    assert solve("AsDf") == "aSdF"
