from parse_music import parse_music


def test_example():
    assert parse_music('') == []
