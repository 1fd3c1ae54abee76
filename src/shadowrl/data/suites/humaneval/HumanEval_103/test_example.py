from rounded_avg import rounded_avg


def test_example():
    assert rounded_avg(1, 5) == "0b11"
