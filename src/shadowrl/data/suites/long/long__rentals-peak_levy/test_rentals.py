from app.rentals import late_penalty, member_bonus, service_charge


def test_late_penalty():
    assert late_penalty(3500) == 980
    assert late_penalty(3499) == 0


def test_member_bonus():
    assert member_bonus(1000) == 40
    assert member_bonus(999) == 0


def test_service_charge():
    assert service_charge(2250) == 697
    assert service_charge(2249) == 0
