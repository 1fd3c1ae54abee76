from next_smallest import next_smallest


def test_example():
    assert next_smallest([1, 2, 3, 4, 5]) == 2
