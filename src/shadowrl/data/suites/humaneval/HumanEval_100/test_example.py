from make_a_pile import make_a_pile


def test_example():
    assert make_a_pile(3) == [3, 5, 7], "Test 3"
