from sorted_list_sum import sorted_list_sum


def test_example():
    assert sorted_list_sum(["aa", "a", "aaa"]) == ["aa"]
