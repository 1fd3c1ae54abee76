from hex_key import hex_key


def test_example():
    assert hex_key("AB") == 1, "First test error: " + str(hex_key("AB"))
