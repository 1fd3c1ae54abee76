from vowels_count import vowels_count


def test_example():
    assert vowels_count("abcde") == 2, "Test 1"
