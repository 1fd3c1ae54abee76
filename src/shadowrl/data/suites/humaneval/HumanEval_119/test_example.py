from match_parens import match_parens


def test_example():
    assert match_parens(['()(', ')']) == 'Yes'
