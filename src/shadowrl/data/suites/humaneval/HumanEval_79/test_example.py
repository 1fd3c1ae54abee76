from decimal_to_binary import decimal_to_binary


def test_example():
    assert decimal_to_binary(0) == "db0db"
