from fibfib import fibfib


def test_example():
    assert fibfib(2) == 1
