from multiply import multiply


def test_example():
    assert multiply(148, 412) == 16, "First test error: " + str(multiply(148, 412))
