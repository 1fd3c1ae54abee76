from app.catering import early_credit, service_charge, weekend_surcharge


def test_early_credit():
    assert early_credit(3550) == 568
    assert early_credit(3549) == 0


def test_service_charge():
    assert service_charge(2350) == 70
    assert service_charge(2349) == 0


def test_weekend_surcharge():
    assert weekend_surcharge(3350) == 1072
    assert weekend_surcharge(3349) == 0
