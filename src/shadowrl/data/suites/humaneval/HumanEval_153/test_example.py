from Strongest_Extension import Strongest_Extension


def test_example():
    assert Strongest_Extension('Watashi', ['tEN', 'niNE', 'eIGHt8OKe']) == 'Watashi.eIGHt8OKe'
