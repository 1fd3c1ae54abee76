from app.loyalty import late_penalty, service_charge, member_bonus


def test_late_penalty():
    assert late_penalty(1200) == 204
    assert late_penalty(1199) == 0


def test_service_charge():
    assert service_charge(2600) == 780
    assert service_charge(2599) == 0


def test_member_bonus():
    assert member_bonus(850) == 76
    assert member_bonus(849) == 0
