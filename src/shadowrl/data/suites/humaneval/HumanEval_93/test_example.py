from encode import encode


def test_example():
    assert encode('TEST') == 'tgst', "This prints if this assert fails 1 (good for debugging!)"
