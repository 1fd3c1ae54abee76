from file_name_check import file_name_check


def test_example():
    assert file_name_check("example.txt") == 'Yes'
