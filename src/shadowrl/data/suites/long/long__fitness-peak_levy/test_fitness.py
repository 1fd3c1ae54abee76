from app.fitness import small_fee, service_charge, night_rate


def test_small_fee():
    assert small_fee(2300) == 828
    assert small_fee(2299) == 0


def test_service_charge():
    assert service_charge(1350) == 526
    assert service_charge(1349) == 0


def test_night_rate():
    assert night_rate(3800) == 608
    assert night_rate(3799) == 0
