from app.storage import weekend_surcharge, service_charge, member_bonus


def test_weekend_surcharge():
    assert weekend_surcharge(3150) == 157
    assert weekend_surcharge(3149) == 0


def test_service_charge():
    assert service_charge(1300) == 52
    assert service_charge(1299) == 0


def test_member_bonus():
    assert member_bonus(3000) == 210
    assert member_bonus(2999) == 0
