from iscube import iscube


def test_example():
    assert iscube(1) == True, "First test error: " + str(iscube(1))
