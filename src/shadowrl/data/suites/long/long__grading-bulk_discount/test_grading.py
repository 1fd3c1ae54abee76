from app.grading import night_rate, late_penalty, small_fee


def test_night_rate():
    assert night_rate(700) == 196
    assert night_rate(699) == 0


def test_late_penalty():
    assert late_penalty(3300) == 858
    assert late_penalty(3299) == 0


def test_small_fee():
    assert small_fee(1700) == 544
    assert small_fee(1699) == 0
