from strange_sort_list import strange_sort_list


def test_example():
    assert strange_sort_list([1, 2, 3, 4]) == [1, 4, 2, 3]
