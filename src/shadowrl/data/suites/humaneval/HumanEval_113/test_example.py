from odd_count import odd_count


def test_example():
    assert odd_count(['1234567']) == ["the number of odd elements 4n the str4ng 4 of the 4nput."], "Test 1"
