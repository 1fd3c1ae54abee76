from same_chars import same_chars


def test_example():
    assert same_chars('eabcdzzzz', 'dddzzzzzzzddeddabc') == True
