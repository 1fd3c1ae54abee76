from app.insurance import small_fee, late_penalty, night_rate


def test_small_fee():
    assert small_fee(550) == 93
    assert small_fee(549) == 0


def test_late_penalty():
    assert late_penalty(2800) == 196
    assert late_penalty(2799) == 0


def test_night_rate():
    assert night_rate(4300) == 516
    assert night_rate(4299) == 0
