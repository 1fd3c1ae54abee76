from solve import solve


def test_example():
    assert solve(1000) == "1", "Error"
