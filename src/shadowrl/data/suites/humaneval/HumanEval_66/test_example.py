from digitSum import digitSum


def test_example():
    assert digitSum("") == 0, "Error"
