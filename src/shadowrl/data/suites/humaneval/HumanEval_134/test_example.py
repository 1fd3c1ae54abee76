from check_if_last_char_is_a_letter import check_if_last_char_is_a_letter


def test_example():
    assert check_if_last_char_is_a_letter("apple") == False
