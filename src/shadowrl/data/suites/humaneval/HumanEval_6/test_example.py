from parse_nested_parens import parse_nested_parens


def test_example():
    assert parse_nested_parens('(()()) ((())) () ((())()())') == [2, 3, 1, 3]
